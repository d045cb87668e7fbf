// Package processtest tells tests whether a process is still running, on
// each system the way that system allows: tests of process-tree kills use it
// to check that a grandchild is gone.
package processtest
