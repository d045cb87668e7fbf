package web

import "time"

// Page names of the token pages.
const (
	PageTokens      = "tokens"
	PageTokenRevoke = "tokenrevoke"
)

// TokenRow is one bearer token, never its secret.
type TokenRow struct {
	ID        string
	Role      string
	Note      string
	CreatedAt time.Time
	CreatedBy string
	// ExpiresAt is nil for a token that never expires.
	ExpiresAt *time.Time
	Expired   bool
	// LastUsed is zero when the token was never used (or not since the
	// server began recording uses).
	LastUsed time.Time
	// Current is the token this session signed in with.
	Current bool
}

// TokenForm is the create form, as submitted.
type TokenForm struct {
	Role    string
	Note    string
	Expires string
}

// NewToken is a token just created: its secret is shown this once.
type NewToken struct {
	ID     string
	Role   string
	Secret string
	// ExpiresAt is nil for a token that never expires.
	ExpiresAt *time.Time
}

// TokensView is the admin's list of tokens with the create form.
type TokensView struct {
	Layout
	Tokens []TokenRow
	Roles  []Option
	Form   TokenForm
	// FormError is why the create form was refused; FormField names the
	// field at fault.
	FormError string
	FormField string
	Created   *NewToken
	// LastUsedEvery is how late a recorded last use may be ("5 minutes").
	LastUsedEvery string
	NextURL       string
}

// TokenRevokeView asks to confirm a token's revocation.
type TokenRevokeView struct {
	Layout
	Token TokenRow
}
