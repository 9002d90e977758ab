package httpapi

import (
	"context"
	"errors"
)

// ErrKeptChanging is returned by Swap when every attempt lost its race:
// the caller answers it with its own 409.
var ErrKeptChanging = errors.New("httpapi: the record kept changing during the update")

// Swap runs the "read, change, compare-and-swap" loop of an update:
// attempt reads the record, changes it and writes it back only if it is
// still as read, reporting whether it did. Swap calls attempt until it
// swaps or fails, at most tries times (then ErrKeptChanging), stopping
// early when ctx is done, so that an update never undoes a racing one
// nor spins.
func Swap(ctx context.Context, tries int, attempt func() (swapped bool, err error)) error {
	for range tries {
		swapped, err := attempt()
		if err != nil || swapped {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
	}
	return ErrKeptChanging
}
