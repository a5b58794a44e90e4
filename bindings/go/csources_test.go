// Promises: none

package accel

import (
	"os"
	"os/exec"
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
// the old C. The hash is scripts/go_csources_hash.py's alone (one
// definition of what it covers); this test runs its --check.
func TestCSourcesHash(t *testing.T) {
	out, err := exec.Command("python3", "../../scripts/go_csources_hash.py", "--check").CombinedOutput()
	if err != nil {
		t.Fatalf("scripts/go_csources_hash.py --check: %v\n%s(go build and go test here run the C "+
			"compiled from the sources csources_hash.go names until it is rewritten; "+
			"python3 comes with scripts/deps.sh)", err, out)
	}
}
