package apiclient

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"time"
)

// PluginRequest is a request for a plugin as the server shows it (POST
// /v1/requests, GET /v1/requests/mine).
type PluginRequest struct {
	ID      string         `json:"id"`
	Plugin  string         `json:"plugin"`
	Reason  string         `json:"reason"`
	Token   string         `json:"token"`
	Role    string         `json:"role"`
	Machine string         `json:"machine,omitempty"`
	Created time.Time      `json:"created"`
	Status  string         `json:"status"` // pending, approved, expired, denied
	Answer  *RequestAnswer `json:"answer,omitempty"`
}

// RequestAnswer is an administrator's answer to a request.
type RequestAnswer struct {
	Status string     `json:"status"` // approved, denied
	Until  *time.Time `json:"until,omitempty"`
	Note   string     `json:"note,omitempty"`
	By     string     `json:"by"`
	At     time.Time  `json:"at"`
}

// Describe is the request's answer in one line for a person:
// "requested 2026-12-03: approved until 2027-01-01 by tok_…: note",
// "requested 2026-12-03: denied by tok_…: note", "requested 2026-12-03:
// pending".
func (q PluginRequest) Describe() string {
	var b strings.Builder
	fmt.Fprintf(&b, "requested %s: %s", q.Created.UTC().Format("2006-01-02"), q.Status)
	if a := q.Answer; a != nil {
		if a.Until != nil && (q.Status == "approved" || q.Status == "expired") {
			fmt.Fprintf(&b, " until %s", untilText(*a.Until))
		}
		fmt.Fprintf(&b, " by %s", a.By)
		if a.Note != "" {
			fmt.Fprintf(&b, ": %s", a.Note)
		}
	}
	return clean(b.String(), 512)
}

// untilText is a date, or a time when it is not midnight UTC.
func untilText(t time.Time) string {
	t = t.UTC()
	if t.Hour() == 0 && t.Minute() == 0 && t.Second() == 0 && t.Nanosecond() == 0 {
		return t.Format("2006-01-02")
	}
	return t.Format(time.RFC3339)
}

// MaxRequestPages bounds the pages Requests reads.
const MaxRequestPages = 100

// CreateRequest asks the server for plugin (name@marketplace), with a
// reason and this machine's id.
func (c *Client) CreateRequest(ctx context.Context, plugin, reason, machine string) (PluginRequest, error) {
	var out struct {
		Request PluginRequest `json:"request"`
	}
	err := c.Do(ctx, "POST", "/v1/requests", map[string]string{"plugin": plugin, "reason": reason, "machine": machine}, &out)
	return out.Request, err
}

// MyRequests lists the requests of the client's token, oldest first.
func (c *Client) MyRequests(ctx context.Context) ([]PluginRequest, error) {
	var all []PluginRequest
	cursor := ""
	for range MaxRequestPages {
		path := "/v1/requests/mine"
		if cursor != "" {
			path += "?cursor=" + url.QueryEscape(cursor)
		}
		var page struct {
			Requests []PluginRequest `json:"requests"`
			Next     string          `json:"next"`
		}
		if err := c.Do(ctx, "GET", path, nil, &page); err != nil {
			return nil, err
		}
		all = append(all, page.Requests...)
		if page.Next == "" {
			return all, nil
		}
		cursor = page.Next
	}
	return all, nil
}

// LatestByPlugin keeps each plugin's most recent request.
func LatestByPlugin(qs []PluginRequest) map[string]PluginRequest {
	out := map[string]PluginRequest{}
	for _, q := range qs {
		if o, ok := out[q.Plugin]; !ok || !q.Created.Before(o.Created) {
			out[q.Plugin] = q
		}
	}
	return out
}
