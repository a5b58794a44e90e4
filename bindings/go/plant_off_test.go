// Promises: none

//go:build !accel_plant

package accel

import (
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// plantBugs plants nothing without the build tag accel_plant
// (plant_on_test.go).
func plantBugs(t *testing.T) {}

// A program built without the tag links none of the package's test
// switches or hooks (names ending in ForTest): the node example, built
// as a user builds it, is read with go tool nm.
func TestNoTestSwitchInAProgram(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the node example")
	}
	gobin := filepath.Join(runtime.GOROOT(), "bin", "go")
	exe := filepath.Join(t.TempDir(), "node")
	if out, err := exec.Command(gobin, "build", "-o", exe, "./examples/node").CombinedOutput(); err != nil {
		t.Fatalf("go build ./examples/node: %v\n%s", err, out)
	}
	out, err := exec.Command(gobin, "tool", "nm", exe).CombinedOutput()
	if err != nil {
		t.Fatalf("go tool nm: %v\n%s", err, out)
	}
	for _, l := range strings.Split(string(out), "\n") {
		if f := strings.Fields(l); len(f) > 0 {
			if name := f[len(f)-1]; strings.HasPrefix(name, "accel.") && strings.Contains(name, "ForTest") {
				t.Errorf("the node example links %s", strings.TrimSpace(l))
			}
		}
	}
}
