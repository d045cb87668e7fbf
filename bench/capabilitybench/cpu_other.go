//go:build !unix

package main

import "time"

// cpu is 0 where the system does not say: the bench then compares wall
// time only.
func cpu() time.Duration { return 0 }
