// Package processtest runs commands for tests (Output: what a command
// printed and its exit code, under a deadline) and tells them whether a
// process is still running, on
// each system the way that system allows: tests of process-tree kills use it
// to check that a grandchild is gone.
package processtest
