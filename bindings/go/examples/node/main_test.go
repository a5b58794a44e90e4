package main

import "testing"

func TestNodeExample(t *testing.T) {
	if err := run(20, 3); err != nil {
		t.Fatal(err)
	}
}
