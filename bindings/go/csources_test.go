// Promises: none

package accel

import (
	"crypto/sha256"
	"encoding/hex"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// The package compiles the library's C sources through csources.c, which
// includes them all: the set must be the library's (CMakeLists.txt
// ACCEL_SOURCES), or the Go build drifts from the C one.
func TestCSourcesMatchCMake(t *testing.T) {
	cm, err := os.ReadFile("../../CMakeLists.txt")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?s)set\(ACCEL_SOURCES(.*?)\)`).FindSubmatch(cm)
	if m == nil {
		t.Fatal("no set(ACCEL_SOURCES ...) in CMakeLists.txt")
	}
	want := strings.Fields(string(m[1]))
	sort.Strings(want)
	wrappers, _ := filepath.Glob("*.c")
	inc := regexp.MustCompile(`#include "\.\./\.\./([^"]+\.c)"`)
	var got []string
	for _, w := range wrappers {
		b, err := os.ReadFile(w)
		if err != nil {
			t.Fatal(err)
		}
		for _, x := range inc.FindAllSubmatch(b, -1) {
			got = append(got, string(x[1]))
		}
	}
	sort.Strings(got)
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("C sources compiled by the Go package:\n  %v\nCMakeLists.txt ACCEL_SOURCES:\n  %v", got, want)
	}
}

// Go's build cache keys the package on its own directory's files, not on
// what csources.c includes from elsewhere: csources_hash.go carries the
// C sources' hash as a cgo define so that a change to them rebuilds the
// package's C. Stale, `go build` in a clone that already built would run
// the old C. The hash is scripts/go_csources_hash.py's: every .c and .h
// under runtime/, include/ and backends/, by sorted path, each as path,
// NUL, content, NUL.
func TestCSourcesHash(t *testing.T) {
	var paths []string
	for _, d := range []string{"runtime", "include", "backends"} {
		err := filepath.WalkDir(filepath.Join("../..", d), func(p string, e fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if e.Type().IsRegular() && (strings.HasSuffix(p, ".c") || strings.HasSuffix(p, ".h")) {
				rel, err := filepath.Rel("../..", p)
				if err != nil {
					return err
				}
				paths = append(paths, filepath.ToSlash(rel))
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	sort.Strings(paths)
	h := sha256.New()
	for _, p := range paths {
		b, err := os.ReadFile(filepath.Join("../..", p))
		if err != nil {
			t.Fatal(err)
		}
		h.Write([]byte(p + "\x00"))
		h.Write(b)
		h.Write([]byte{0})
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != cSourcesSHA256 {
		t.Fatalf("csources_hash.go is stale (the C sources hash to %s, the file says %s): "+
			"run scripts/go_csources_hash.py, or go build and go test here keep running the C "+
			"compiled from the sources the file names", got, cSourcesSHA256)
	}
}
