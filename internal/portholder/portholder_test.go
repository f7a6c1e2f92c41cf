package portholder

import (
	"net"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
)

func TestExplainNamesThisProcess(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	port := ln.Addr().(*net.TCPAddr).Port
	_, err = net.Listen("tcp", ln.Addr().String())
	if err == nil {
		t.Fatal("second listen succeeded")
	}
	got := Explain(err).Error()
	want := "port " + strconv.Itoa(port) + " is held by pid " + strconv.Itoa(os.Getpid()) + " ("
	if !strings.Contains(got, want) || !strings.Contains(got, "address already in use") {
		t.Errorf("got %q, want it to contain %q", got, want)
	}
}

func TestExplainLeavesOtherErrors(t *testing.T) {
	_, err := net.Listen("tcp", "127.0.0.1:notaport")
	if got := Explain(err); got != err {
		t.Errorf("got %v, want the error unchanged", got)
	}
}

func TestHolderUnknown(t *testing.T) {
	old := procRoot
	procRoot = t.TempDir()
	defer func() { procRoot = old }()
	if got := Holder(1); got != "" {
		t.Errorf("got %q, want \"\"", got)
	}
}
