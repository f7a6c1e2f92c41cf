package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/signal"
	"runtime/metrics"
	"strings"
	"syscall"
)

// runtimeStats is what a server process's Go runtime reports about its heap:
// the allocation and collections between two samples tell how much garbage a
// request makes and how often a collection lands in the middle of one (the
// tail at low concurrency, where a request waits out a collection's pauses
// and assists).
type runtimeStats struct {
	AllocBytes uint64 `json:"allocBytes"` // total allocated since start
	GCCycles   uint64 `json:"gcCycles"`   // completed collections since start
	HeapGoal   uint64 `json:"heapGoal"`   // the heap size the next collection starts at
}

var statNames = []string{"/gc/heap/allocs:bytes", "/gc/cycles/total:gc-cycles", "/gc/heap/goal:bytes"}

func readRuntimeStats() runtimeStats {
	s := make([]metrics.Sample, len(statNames))
	for i, n := range statNames {
		s[i].Name = n
	}
	metrics.Read(s)
	return runtimeStats{AllocBytes: s[0].Value.Uint64(), GCCycles: s[1].Value.Uint64(), HeapGoal: s[2].Value.Uint64()}
}

// answerStats prints one JSON line of runtimeStats on stdout for every
// SIGUSR1 until ctx is done: the driver asks before and after a run.
func answerStats(ctx context.Context) {
	c := make(chan os.Signal, 1)
	signal.Notify(c, syscall.SIGUSR1)
	go func() {
		defer signal.Stop(c)
		for {
			select {
			case <-ctx.Done():
				return
			case <-c:
				b, _ := json.Marshal(readRuntimeStats())
				fmt.Println(string(b))
			}
		}
	}()
}

// serverProc is one running server process, as the driver sees it.
type serverProc struct {
	pid    int
	stdout *bufio.Reader
}

// stats asks the server for its runtime stats.
func (s serverProc) stats() (runtimeStats, error) {
	if err := syscall.Kill(s.pid, syscall.SIGUSR1); err != nil {
		return runtimeStats{}, err
	}
	line, err := s.stdout.ReadString('\n')
	if err != nil {
		return runtimeStats{}, fmt.Errorf("read the server's runtime stats: %w", err)
	}
	var st runtimeStats
	if err := json.Unmarshal([]byte(strings.TrimSpace(line)), &st); err != nil {
		return runtimeStats{}, fmt.Errorf("read the server's runtime stats %q: %w", line, err)
	}
	return st, nil
}
