// Command empty links nothing beyond the Go runtime and exits: the start
// cost of any Go program on this machine (see bench/startfloor).
package main

func main() {}
