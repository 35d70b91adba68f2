package main

import (
	"bytes"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// The example's tree: the request, its three tasks, the yields of the one
// that waits, and the span a task started, under its task.
func TestTree(t *testing.T) {
	var export, tree bytes.Buffer
	if err := run(&export, &tree); err != nil {
		t.Fatal(err)
	}
	want := `trace tree:
  GET /report
    fast [ran] start
    fast [ran] start
      query stock
    slow [ran] start,yield,resume
`
	got := tree.String()
	// The two fast tasks start in either order: compare them as a set.
	alt := strings.Replace(want, "    fast [ran] start\n    fast [ran] start\n      query stock\n", "    fast [ran] start\n      query stock\n    fast [ran] start\n", 1)
	if got != want && got != alt {
		t.Errorf("tree:\n%s\nwant:\n%s", got, want)
	}
	if !strings.Contains(export.String(), `"Name": "slow"`) || !strings.Contains(export.String(), "smartpool.yields") {
		t.Errorf("the stdout exporter wrote no task span:\n%s", export.String())
	}
}
