//go:build !unix

package main

import (
	"fmt"
	"os"
)

func main() {
	fmt.Fprintln(os.Stderr, "jepsen: the fault test pauses etcd members with SIGSTOP and needs a Unix system")
	os.Exit(2)
}
