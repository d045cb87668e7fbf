package web

import "time"

// PageRequests is the admin's queue of plugin requests.
const PageRequests = "requests"

// RequestRow is one request and its answer.
type RequestRow struct {
	ID      string
	Plugin  string
	Reason  string
	Token   string
	Role    string
	Machine string
	Created time.Time
	// Status is pending, approved, expired or denied.
	Status string
	// Answer fields, empty while pending.
	Until    *time.Time
	Note     string
	By       string
	Answered time.Time
	// ApproveURL and DenyURL are the forms' actions; empty when the
	// request cannot take that answer.
	ApproveURL string
	DenyURL    string
}

// RequestsView is the queue, filtered by status.
type RequestsView struct {
	Layout
	Status   []Option // the filter's choices
	Requests []RequestRow
	// Today is the earliest date an approval may carry (the date input's
	// min).
	Today   string
	NextURL string
}
