// Command wharf is the plugin marketplace and policy client for coding agents.
package main

import "os"

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}
