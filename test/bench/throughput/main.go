// Command throughput drives three webhook servers serving the same
// validating handler with the same certificate over loopback TLS: hookback's
// server, controller-runtime's webhook server and a bare net/http server
// (the floor). Each server runs in its own process, so its CPU time is its
// own; the load generator runs here. Runs alternate between the servers, for
// HTTP/2 and HTTP/1.1 with keep-alive, at each concurrency. It prints a
// Markdown report: req/s, p50, p99, and for the server process its CPU
// seconds, the KiB it allocated and the collections it ran, per request.
//
//	go run ./throughput -duration 3s -rounds 2
package main

import (
	"flag"
	"fmt"
	"log"
	"os"
	"strconv"
	"strings"
)

func main() {
	serve := flag.String("serve", "", "internal: run this server (hookback, controller-runtime, bare) with -dir's certificate")
	dir := flag.String("dir", "", "internal: certificate directory of -serve")
	duration := flag.Duration("duration", 3e9, "length of one run")
	rounds := flag.Int("rounds", 2, "runs per server, protocol and concurrency (alternating servers)")
	protos := flag.String("protocols", "h2,http/1.1", "protocols to run, comma-separated")
	concs := flag.String("concurrency", "1,8,64", "concurrencies to run, comma-separated")
	flag.Parse()
	if *serve != "" {
		if err := runServer(*serve, *dir); err != nil {
			log.Fatal(err)
		}
		return
	}
	var levels []int
	for _, c := range strings.Split(*concs, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(c))
		if err != nil || n < 1 {
			fmt.Fprintf(os.Stderr, "throughput: -concurrency %q: want positive integers\n", *concs)
			os.Exit(2)
		}
		levels = append(levels, n)
	}
	if err := drive(os.Stdout, *duration, *rounds, strings.Split(*protos, ","), levels); err != nil {
		fmt.Fprintln(os.Stderr, "throughput:", err)
		os.Exit(1)
	}
}
