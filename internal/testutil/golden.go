package testutil

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// Golden compares got with the golden file at path, or with update
// rewrites the file instead. Golden files pin the bytes of a wire or disk
// format: a change to an encoder that moves a byte fails here even when
// its own round trip still passes.
func Golden(t testing.TB, path string, got []byte, update bool) {
	t.Helper()
	if update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run the test with -update to write it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s: encoding changed: got\n%x\nwant\n%x\n(bytes already written must still decode: an intended change keeps this file under another name for a decoding test, then writes the new one with -update)", path, got, want)
	}
}

// ReadGolden returns the golden file at path.
func ReadGolden(t testing.TB, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run the test with -update to write it)", err)
	}
	return b
}

// SameFields fails t for every field, named by its path, in which got
// and want differ, so a value decoded from a golden file with a
// renumbered field names that field. Structs of this module are compared
// field by field, anything else whole.
func SameFields(t testing.TB, got, want any) {
	t.Helper()
	var diffs []string
	walkDiff(reflect.ValueOf(got), reflect.ValueOf(want), reflect.TypeOf(want).String(), &diffs)
	for _, d := range diffs {
		t.Error(d)
	}
	if len(diffs) == 0 && !reflect.DeepEqual(got, want) {
		t.Errorf("got\n%+v\nwant\n%+v", got, want)
	}
}

// AllSet fails t for every field of v, named by its path
// ("store.URL.Ignore.MinChange"), that holds its zero value, except the
// paths in unset: a golden value must set every field so that each
// field's number or flag is in the golden file, and a field added later
// fails here until the golden value sets it too.
func AllSet(t testing.TB, v any, unset ...string) {
	t.Helper()
	var zero []string
	walkSet(reflect.ValueOf(v), reflect.TypeOf(v).String(), &zero)
	for _, z := range zero {
		if !slices.Contains(unset, z) {
			t.Errorf("%s is not set in the golden value", z)
		}
	}
}

const module = "github.com/freshcrawl/freshcrawl"

// ours reports whether t is a struct declared in this module: walked into,
// where other structs (time.Time) are leaves.
func ours(t reflect.Type) bool {
	return t.Kind() == reflect.Struct && strings.HasPrefix(t.PkgPath(), module)
}

func walkDiff(got, want reflect.Value, path string, diffs *[]string) {
	if got.Kind() == reflect.Pointer && want.Kind() == reflect.Pointer && !got.IsNil() && !want.IsNil() && ours(want.Elem().Type()) {
		got, want = got.Elem(), want.Elem()
	}
	if !ours(want.Type()) {
		if !got.CanInterface() || !want.CanInterface() {
			return // unexported: SameFields compares the whole value
		}
		if g, w := got.Interface(), want.Interface(); !reflect.DeepEqual(g, w) {
			*diffs = append(*diffs, fmt.Sprintf("%s: got %+v, want %+v", path, g, w))
		}
		return
	}
	for i := range want.NumField() {
		walkDiff(got.Field(i), want.Field(i), path+"."+want.Type().Field(i).Name, diffs)
	}
}

func walkSet(v reflect.Value, path string, zero *[]string) {
	if v.Kind() == reflect.Pointer && !v.IsNil() && ours(v.Elem().Type()) {
		v = v.Elem()
	}
	switch {
	case ours(v.Type()):
		for i := range v.NumField() {
			walkSet(v.Field(i), path+"."+v.Type().Field(i).Name, zero)
		}
	case v.Kind() == reflect.Slice || v.Kind() == reflect.Map:
		if v.Len() == 0 {
			*zero = append(*zero, path)
		} else if v.Kind() == reflect.Slice && ours(v.Type().Elem()) {
			walkSet(v.Index(0), path+"[0]", zero)
		}
	case v.IsZero():
		*zero = append(*zero, path)
	}
}
