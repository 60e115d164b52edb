package store

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

func TestHazardSurvivesReopen(t *testing.T) {
	dir := t.TempDir()
	db := open(t, dir)
	if _, found, err := db.Hazard(); err != nil || found {
		t.Fatalf("new store: found %v, %v; want none", found, err)
	}
	want := Hazard{ChangePoints: 12.75, Observed: 3.5e9, At: time.Unix(1_700_000_000, 123456789)}
	if err := db.SetHazard(want); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db = open(t, dir)
	defer db.Close()
	got, found, err := db.Hazard()
	if err != nil || !found {
		t.Fatalf("after reopen: found %v, %v", found, err)
	}
	if got.ChangePoints != want.ChangePoints || got.Observed != want.Observed || !got.At.Equal(want.At) {
		t.Errorf("after reopen: %+v, want %+v", got, want)
	}
}

func TestHazardRefusesInvalidCountsAndKeepsStored(t *testing.T) {
	db := open(t, t.TempDir())
	defer db.Close()
	good := Hazard{ChangePoints: 2, Observed: 100, At: time.Unix(1_700_000_000, 0)}
	if err := db.SetHazard(good); err != nil {
		t.Fatal(err)
	}
	at := good.At
	for _, h := range []Hazard{
		{ChangePoints: -1, Observed: 1, At: at},
		{ChangePoints: math.NaN(), Observed: 1, At: at},
		{ChangePoints: 1, Observed: math.Inf(1), At: at},
		{ChangePoints: 1, Observed: 1},
	} {
		if err := db.SetHazard(h); err == nil {
			t.Errorf("SetHazard(%+v) accepted", h)
		}
	}
	got, found, err := db.Hazard()
	if err != nil || !found || got.ChangePoints != 2 || got.Observed != 100 {
		t.Errorf("stored counts after refused writes: %+v, %v, %v; want the good ones", got, found, err)
	}
}

// A hazard value SetHazard cannot have written is reported by Hazard and
// by the store check (freshcrawl store check), and nothing else is lost.
func TestHazardCorruptValueReported(t *testing.T) {
	dir := t.TempDir()
	for _, v := range [][]byte{[]byte("short"), make([]byte, hazardLen)} { // the zero value is undated
		db := open(t, dir)
		if err := db.bolt.Update(func(tx *bolt.Tx) error { return tx.Bucket(bucketMeta).Put(metaHazard, v) }); err != nil {
			t.Fatal(err)
		}
		if _, found, err := db.Hazard(); !errors.Is(err, ErrCorrupt) || found {
			t.Errorf("value of %d bytes: found %v, %v; want ErrCorrupt", len(v), found, err)
		}
		path := db.Path()
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
		r, err := Check(path)
		if err == nil || r.OK() || !strings.Contains(fmt.Sprint(r.Errors), `meta "hazard"`) {
			t.Errorf("check of a store with a %d-byte hazard: %v, errors %v; want the hazard named", len(v), err, r.Errors)
		}
	}
}

func TestHazardWriteFenced(t *testing.T) {
	db := open(t, t.TempDir())
	defer db.Close()
	if err := db.TakeFence(3); err != nil {
		t.Fatal(err)
	}
	// Another coordinator takes the store over.
	if err := db.bolt.Update(func(tx *bolt.Tx) error { return tx.Bucket(bucketMeta).Put(metaFence, u64(4)) }); err != nil {
		t.Fatal(err)
	}
	if err := db.SetHazard(Hazard{ChangePoints: 1, Observed: 1, At: time.Unix(1, 0)}); !errors.Is(err, ErrFenced) {
		t.Errorf("SetHazard after a takeover: %v, want ErrFenced", err)
	}
}
