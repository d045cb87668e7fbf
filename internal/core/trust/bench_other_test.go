//go:build !linux

package trust

import "testing"

func syscallFloors(*testing.B, []string, []FP, func(*testing.B)) {}
