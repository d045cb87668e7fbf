// Command testserver is a small MCP server over stdio, built from the Go
// SDK, for the supervisor's tests. Its behavior is chosen by environment:
//
//	TESTSERVER_MODE=crash-at-start  write to stderr and exit 3 at once
//	TESTSERVER_MODE=crash-later     serve, then exit 4 after 300 ms
//	TESTSERVER_MODE=not-mcp         print garbage and sleep
//	TESTSERVER_NAME                 the server name in the handshake
//	TESTSERVER_PIDFILE              write the process id there
//	TESTSERVER_STARTS               append the process id to this file
//	TESTSERVER_CRASH_FIRST=FILE     crash-later when FILE does not exist
//	                                (creating it), serve normally when it does
//	TESTSERVER_THEN_FAIL=FILE       crash-later when FILE does not exist
//	                                (creating it), crash-at-start when it does
//	TESTSERVER_DESCRIPTION_FILE=F   the echo tool's description is F's content
//	                                (read at start)
//	TESTSERVER_WATCH_DESCRIPTION=1  with the above: F is read again every
//	                                20 ms; when it changes the echo tool is
//	                                replaced, which sends
//	                                notifications/tools/list_changed
//
// Tools: echo (returns its text), env (returns an environment variable).
package main

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

type echoIn struct {
	Text string `json:"text" jsonschema:"the text to echo"`
}

type envIn struct {
	Name string `json:"name" jsonschema:"the variable's name"`
}

func main() {
	if f := os.Getenv("TESTSERVER_PIDFILE"); f != "" {
		os.WriteFile(f, []byte(strconv.Itoa(os.Getpid())), 0o644)
	}
	if f := os.Getenv("TESTSERVER_STARTS"); f != "" {
		if out, err := os.OpenFile(f, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644); err == nil {
			fmt.Fprintln(out, os.Getpid())
			out.Close()
		}
	}
	mode := os.Getenv("TESTSERVER_MODE")
	if f := os.Getenv("TESTSERVER_CRASH_FIRST"); f != "" {
		if out, err := os.OpenFile(f, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644); err == nil {
			out.Close()
			mode = "crash-later"
		}
	}
	if f := os.Getenv("TESTSERVER_THEN_FAIL"); f != "" {
		mode = "crash-at-start"
		if out, err := os.OpenFile(f, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644); err == nil {
			out.Close()
			mode = "crash-later"
		}
	}
	switch mode {
	case "crash-at-start":
		fmt.Fprintln(os.Stderr, "testserver: config file missing, giving up")
		os.Exit(3)
	case "crash-later":
		go func() {
			time.Sleep(300 * time.Millisecond)
			fmt.Fprintln(os.Stderr, "testserver: lost my database")
			os.Exit(4)
		}()
	case "not-mcp":
		fmt.Println("hello, I am not an MCP server")
		time.Sleep(time.Minute)
		return
	}
	name := os.Getenv("TESTSERVER_NAME")
	if name == "" {
		name = "testserver"
	}
	s := mcp.NewServer(&mcp.Implementation{Name: name, Version: "1.2.3"}, nil)
	descFile := os.Getenv("TESTSERVER_DESCRIPTION_FILE")
	description := func() string {
		if descFile == "" {
			return "Echo the text back"
		}
		b, err := os.ReadFile(descFile)
		if err != nil {
			fmt.Fprintln(os.Stderr, "testserver:", err)
			os.Exit(5)
		}
		return string(b)
	}
	addEcho := func(d string) {
		mcp.AddTool(s, &mcp.Tool{Name: "echo", Description: d}, func(ctx context.Context, req *mcp.CallToolRequest, in echoIn) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: in.Text}}}, nil, nil
		})
	}
	cur := description()
	addEcho(cur)
	if descFile != "" && os.Getenv("TESTSERVER_WATCH_DESCRIPTION") == "1" {
		go func() {
			for range time.Tick(20 * time.Millisecond) {
				if d := description(); d != cur {
					cur = d
					addEcho(d) // replaces the tool and notifies the client
				}
			}
		}()
	}
	mcp.AddTool(s, &mcp.Tool{Name: "env", Description: "Read an environment variable"}, func(ctx context.Context, req *mcp.CallToolRequest, in envIn) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: os.Getenv(in.Name)}}}, nil, nil
	})
	if err := s.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		fmt.Fprintln(os.Stderr, "testserver:", err)
		os.Exit(1)
	}
}
