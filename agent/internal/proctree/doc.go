// Package proctree runs a command as the root of a process tree that can be
// killed whole, so a hook or MCP server that times out or is stopped takes
// what it started with it. On Unix the tree is the command's own process
// group; on Windows it is a job object the command is put in before it runs
// its first instruction.
//
// A Tree is for one command. Its methods are safe for concurrent use (Kill
// from a cancel func while another goroutine waits), but Start and Run are
// called once.
package proctree
