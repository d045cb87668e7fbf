// Command staticbundle serves one file on the loopback interface with
// net/http's file serving (ETag + If-None-Match), the way a bundle would be
// published without wharf: the baseline bench/server.sh compares with.
// With -timeouts it runs with the HTTP server limits of wharf-server (header,
// read, write and idle timeouts, header size), which cost net/http some work
// on every request (a read and a write deadline).
package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"time"
)

func main() {
	file := flag.String("file", "", "file to serve at /bundle.tar.gz")
	addr := flag.String("addr", "127.0.0.1:0", "loopback address")
	timeouts := flag.Bool("timeouts", false, "use wharf-server's HTTP server timeouts and header limit")
	flag.Parse()
	body, err := os.ReadFile(*file)
	if err != nil {
		fmt.Fprintln(os.Stderr, "staticbundle:", err)
		os.Exit(1)
	}
	sum := sha256.Sum256(body)
	etag := `"` + hex.EncodeToString(sum[:16]) + `"`
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "staticbundle:", err)
		os.Exit(1)
	}
	if tcp, ok := ln.Addr().(*net.TCPAddr); !ok || !tcp.IP.IsLoopback() {
		fmt.Fprintln(os.Stderr, "staticbundle: only loopback addresses")
		os.Exit(1)
	}
	fmt.Println(ln.Addr().String())
	mod := time.Now()
	hs := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("ETag", etag)
		http.ServeContent(w, r, "bundle.tar.gz", mod, bytes.NewReader(body))
	})}
	if *timeouts { // as api.Server.Serve with the default --request-timeout of 30s
		hs.ReadHeaderTimeout = 10 * time.Second
		hs.ReadTimeout = 40 * time.Second
		hs.WriteTimeout = 40 * time.Second
		hs.IdleTimeout = 120 * time.Second
		hs.MaxHeaderBytes = 64 << 10
	}
	hs.Serve(ln)
}
