// Command wharf is the plugin marketplace and policy client for coding agents.
package main

import "os"

func main() {
	startHeap(64 << 20)
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}
