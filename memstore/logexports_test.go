package memstore

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/modelgateway/gateway/observe"
)

func TestMemoryStoreExportsBounded(t *testing.T) {
	s := New()
	ctx := context.Background()
	base := time.Now().UTC()
	for i := range memoryExportsMax + 2 {
		st := observe.ExportSuccess
		if i == 0 {
			st = observe.ExportInProgress // kept: a job runs it
		}
		at := base.Add(time.Duration(i) * time.Second)
		if err := s.CreateLogExport(ctx, &observe.Export{ID: fmt.Sprint("exp-", i), Status: st, CreatedAt: at, UpdatedAt: at}); err != nil {
			t.Fatal(err)
		}
	}
	all, _ := s.LogExports(ctx, "")
	if len(all) != memoryExportsMax {
		t.Fatalf("%d exports kept, want %d", len(all), memoryExportsMax)
	}
	for id, want := range map[string]bool{"exp-0": true, "exp-1": false, "exp-2": false, "exp-3": true} {
		if _, err := s.LogExport(ctx, "", id); (err == nil) != want {
			t.Errorf("%s kept: %v, want %v", id, err == nil, want)
		}
	}
}
