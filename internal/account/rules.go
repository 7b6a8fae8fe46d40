package account

import (
	"fmt"
	"time"
)

// The rules a Store applies to what it is asked to keep or list. They
// belong to the domain, not to the database: every store calls these, so
// that SQLite and PostgreSQL refuse the same input with the same error
// and stamp the same times, and a store's own code is its SQL.

// Invalidf is an ErrInvalid saying what is wrong with the input.
func Invalidf(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrInvalid}, args...)...)
}

// OrNow is t, or the current time when t is zero: a record given without
// a time is stamped with the time it is stored.
func OrNow(t time.Time) time.Time {
	if t.IsZero() {
		return time.Now()
	}
	return t
}

// Validate checks a key about to be stored: it needs an ID and a hash.
func (k Key) Validate() error {
	if k.ID == "" || len(k.Hash) == 0 {
		return Invalidf("a key needs an ID and a hash")
	}
	return nil
}

// CheckHash refuses an empty secret hash (a key's or a one-time token's
// new hash): no secret hashes to nothing.
func CheckHash(hash []byte) error {
	if len(hash) == 0 {
		return Invalidf("empty hash")
	}
	return nil
}

// CheckPasswordHash refuses an empty password hash: a password is set to
// something, never to nothing.
func CheckPasswordHash(hash string) error {
	if hash == "" {
		return Invalidf("empty password hash")
	}
	return nil
}

// CheckOwnerEmail refuses an owner without an email, the name they sign
// in with.
func CheckOwnerEmail(email string) error {
	if email == "" {
		return Invalidf("an owner needs an email")
	}
	return nil
}

// Validate checks a one-time token about to be stored: it needs a hash,
// a known purpose and an expiry.
func (t OwnerToken) Validate() error {
	if len(t.Hash) == 0 {
		return Invalidf("a token needs a hash")
	}
	if t.Purpose != TokenInvite && t.Purpose != TokenReset {
		return Invalidf("unknown token purpose %q", t.Purpose)
	}
	if t.ExpiresAt.IsZero() {
		return Invalidf("a token needs an expiry")
	}
	return nil
}

// Validate checks a session about to be stored: it needs an ID, a hash,
// a CSRF token and an expiry; an owner's session names its owner, an
// operator's none.
func (se Session) Validate() error {
	if se.ID == "" || len(se.Hash) == 0 || se.CSRF == "" {
		return Invalidf("a session needs an ID, a hash and a CSRF token")
	}
	if se.ExpiresAt.IsZero() {
		return Invalidf("a session needs an expiry")
	}
	switch se.Kind {
	case SessionOwner:
		if se.OwnerID == 0 {
			return Invalidf("an owner's session needs its owner")
		}
	case SessionOperator:
		if se.OwnerID != 0 {
			return Invalidf("an operator's session has no owner")
		}
	default:
		return Invalidf("unknown session kind %q", se.Kind)
	}
	return nil
}

// Stamped is the session with the times a store fills in: a zero
// CreatedAt is now, a zero LastSeenAt is CreatedAt.
func (se Session) Stamped() Session {
	se.CreatedAt = OrNow(se.CreatedAt)
	if se.LastSeenAt.IsZero() {
		se.LastSeenAt = se.CreatedAt
	}
	return se
}

// Checked is a tier request as a store keeps it (CreateTierRequest):
// pending, its tier a known one, its monthly limit the one the tier takes
// (TierLimit), stamped now when it has no time.
func (r TierRequest) Checked() (TierRequest, error) {
	limit, err := TierLimit(r.Tier, r.MonthlyLimit)
	if err != nil {
		return TierRequest{}, err
	}
	r.MonthlyLimit, r.Status, r.CreatedAt = limit, RequestPending, OrNow(r.CreatedAt)
	return r, nil
}

// CheckOwner refuses a request filed by an owner (OwnerID) of another
// account than the one it is for: ownerAccount is the owner's account.
func (r TierRequest) CheckOwner(ownerAccount int64) error {
	if ownerAccount != r.AccountID {
		return Invalidf("owner %d does not own account %d", r.OwnerID, r.AccountID)
	}
	return nil
}

// Decision is the status a decision gives a pending request.
func Decision(approve bool) string {
	if approve {
		return RequestApproved
	}
	return RequestRefused
}

// NotPending is the failure to decide request id, which exists but was
// decided already (ErrConflict): of two racing decisions, the loser's.
func NotPending(id int64) error {
	return fmt.Errorf("%w: request %d is no longer pending", ErrConflict, id)
}

// CheckStatusFilter checks the status a list of tier requests is filtered
// by: one of the statuses, or "" for all.
func CheckStatusFilter(status string) error {
	switch status {
	case "", RequestPending, RequestApproved, RequestRefused:
		return nil
	}
	return Invalidf("unknown request status %q", status)
}

// Validate checks an audit entry about to be stored: it says who did
// what.
func (e AuditEntry) Validate() error {
	if e.Actor == "" || e.Action == "" {
		return Invalidf("an audit entry needs an actor and an action")
	}
	return nil
}

// CheckDays refuses days that are not "2006-01-02": the usage counters'
// days compare as text, which is day order only in that form.
func CheckDays(days ...string) error {
	for _, d := range days {
		if _, err := time.Parse(time.DateOnly, d); err != nil {
			return Invalidf("day %q is not of the form 2006-01-02", d)
		}
	}
	return nil
}

// CheckPage checks a page of a list read newest first: a limit above 0
// and a cursor (the ID the page starts below; 0 for the newest) of 0 or
// more.
func CheckPage(before int64, limit int) error {
	if limit <= 0 || before < 0 {
		return Invalidf("a page needs a limit above 0 and a cursor of 0 or more")
	}
	return nil
}

// CheckListLimit refuses a list's limit of 0 or less: a list asked for
// nothing is a caller's mistake, not an empty answer.
func CheckListLimit(limit int) error {
	if limit <= 0 {
		return Invalidf("a list needs a limit above 0, got %d", limit)
	}
	return nil
}

// CheckCharges refuses a batch with a negative count or cost: a charge
// never gives credits back.
func CheckCharges(reqs []ChargeRequest) error {
	for _, r := range reqs {
		if r.N < 0 || r.Cost < 0 {
			return Invalidf("negative count or cost in a charge")
		}
	}
	return nil
}
