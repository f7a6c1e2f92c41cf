package main

import "sync/atomic"

// atomicCounter counts your webhook server's calls.
type atomicCounter struct{ atomic.Int64 }
