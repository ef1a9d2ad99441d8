// SPDX-License-Identifier: GPL-2.0
//
// gowork [SECONDS]: a Go program for the .gopclntab tests, built by
// workloads.mk twice: gowork (go build -ldflags='-s -w', as Go services
// ship: no .symtab, no DWARF) and gowork-full (both kept).
//
// main.main -> main.leafA(n) and main.leafB(2n), in rounds, until the
// process has used SECONDS (default 2) of CPU time, so that a busy machine
// gives as many samples (at most 20 times that in wall time). leafA and
// leafB have the same body; main.mix is inlined into both (an inline frame
// under each, at this file's line of the call), main.step is not (so leafA
// and leafB are not frameless leaves, whose caller a frame-pointer walk
// would lose).
//
// GROUND TRUTH: nearly every sample of the process is in main.leafA or
// main.leafB, under main.main; leafA has 1/3 of them and leafB 2/3; most
// of each have the inline frame main.mix under it.
package main

import (
	"fmt"
	"os"
	"strconv"
	"syscall"
	"time"
)

//go:noinline
func step(x uint64) uint64 { return x ^ (x >> 29) }

func mix(a, b uint64) uint64 {
	return (a*6364136223846793005 + b) ^ (a >> 7) // MIX_BODY
}

//go:noinline
func leafA(n int) uint64 {
	var x uint64 = 1
	for i := 0; i < n; i++ {
		x = mix(x, uint64(i)) // LEAFA_MIX
		if i&0xffff == 0 {
			x = step(x)
		}
	}
	return x
}

//go:noinline
func leafB(n int) uint64 {
	var x uint64 = 1
	for i := 0; i < n; i++ {
		x = mix(x, uint64(i)) // LEAFB_MIX
		if i&0xffff == 0 {
			x = step(x)
		}
	}
	return x
}

// cpuSeconds: the CPU time the process has used.
func cpuSeconds() float64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
}

func main() {
	seconds := 2.0
	if len(os.Args) > 2 {
		fmt.Fprintln(os.Stderr, "usage: gowork [SECONDS]")
		os.Exit(2)
	}
	if len(os.Args) == 2 {
		s, err := strconv.ParseFloat(os.Args[1], 64)
		if err != nil || s <= 0 {
			fmt.Fprintln(os.Stderr, "gowork: SECONDS must be a positive number")
			os.Exit(2)
		}
		seconds = s
	}
	end := time.Now().Add(time.Duration(20 * seconds * float64(time.Second)))
	var sink uint64
	for cpuSeconds() < seconds && time.Now().Before(end) {
		sink += leafA(1 << 20)
		sink += leafB(2 << 20)
	}
	if sink == 42 {
		fmt.Println(sink) // never: keeps sink alive
	}
}
