// Command etcd is etcd's own server entry point (go.etcd.io/etcd/server/v3/etcdmain),
// wrapped so that `go build` names the binary "etcd".
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() {
	etcdmain.Main(os.Args)
}
