package web

import "time"

// PageApprovals is the review queue.
const PageApprovals = "approvals"

// PendingRow is one held version in the review queue.
type PendingRow struct {
	Plugin, Version, Digest, Mode string
	// Adds is what the version adds over Approved, the version the
	// channels serve meanwhile ("" when none is approved).
	Adds     []string
	Approved string
	// Added, Removed and Changed are the files that differ from Approved.
	Added, Removed, Changed []string
	Truncated               bool
	Seen                    time.Time
	// Findings are the version's content findings; FindingsKnown is
	// false for a version recorded before findings were kept.
	Findings      []FindingRow
	FindingsKnown bool
}

// ApprovalsView is the review queue: the held versions, with a form to
// approve or deny each.
type ApprovalsView struct {
	Layout
	Pending []PendingRow
}
