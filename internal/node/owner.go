package node

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/freshcrawl/freshcrawl/store"
)

// ownerFile, in the data directory, says which coordinator holds the
// store while it runs: commands that find the store locked ask that
// coordinator's API for what they would have read from the store.
const ownerFile = "coordinator.json"

// Owner is the running coordinator a data directory records.
type Owner struct {
	PID     int       `json:"pid"`
	API     string    `json:"api,omitempty"`
	NATS    string    `json:"nats,omitempty"`
	Started time.Time `json:"started"`
}

func writeOwner(dir string, o Owner) error {
	b, err := json.MarshalIndent(o, "", "  ")
	if err != nil {
		return err
	}
	return store.WriteFileAtomic(filepath.Join(dir, ownerFile), func(w io.Writer) error {
		_, err := w.Write(append(b, '\n'))
		return err
	})
}

func removeOwner(dir string) { _ = os.Remove(filepath.Join(dir, ownerFile)) }

// ReadOwner returns the coordinator recorded in data directory dir, if any.
// The record may be stale (a coordinator that was killed): callers use it
// only when the store is locked, that is, when some process holds it.
func ReadOwner(dir string) (Owner, bool, error) {
	var o Owner
	b, err := os.ReadFile(filepath.Join(dir, ownerFile))
	if errors.Is(err, os.ErrNotExist) {
		return o, false, nil
	}
	if err != nil {
		return o, false, err
	}
	if err := json.Unmarshal(b, &o); err != nil {
		return o, false, fmt.Errorf("%s: %w", filepath.Join(dir, ownerFile), err)
	}
	return o, true, nil
}
