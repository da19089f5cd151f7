package dynamotable_test

import (
	"reflect"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/millfleet/mill/internal/base/process"
	"github.com/millfleet/mill/pkg/dynamotable"
)

func TestIdentity(t *testing.T) {
	started := time.Date(2026, 1, 2, 3, 4, 5, 678_000_000, time.UTC)
	id := process.Identity{Hostname: "h1", PID: 4321, Started: started}
	for _, tc := range []struct {
		name  string
		codec dynamotable.Identity
		want  map[string]types.AttributeValue // the item's attributes, as the tables store them
		back  time.Time                       // the start time read back
	}{
		{"seconds", dynamotable.Identity{Started: "started_at"}, map[string]types.AttributeValue{
			"hostname": &types.AttributeValueMemberS{Value: "h1"}, "pid": &types.AttributeValueMemberN{Value: "4321"},
			"started_at": &types.AttributeValueMemberN{Value: "1767323045"},
		}, started.Truncate(time.Second)},
		{"milliseconds", dynamotable.Identity{Started: "started_ms", Millis: true}, map[string]types.AttributeValue{
			"hostname": &types.AttributeValueMemberS{Value: "h1"}, "pid": &types.AttributeValueMemberN{Value: "4321"},
			"started_ms": &types.AttributeValueMemberN{Value: "1767323045678"},
		}, started},
	} {
		item := map[string]types.AttributeValue{}
		tc.codec.Put(item, id)
		if !reflect.DeepEqual(item, tc.want) {
			t.Errorf("%s: Put wrote %#v, want %#v", tc.name, item, tc.want)
		}
		if got := tc.codec.Of(item); got.Hostname != "h1" || got.PID != 4321 || !got.Started.Equal(tc.back) {
			t.Errorf("%s: Of = %+v, want h1 4321 %v", tc.name, got, tc.back)
		}
	}
}

// An unknown host and start time are left out, and read back as zero.
func TestIdentityLeavesOutTheUnknown(t *testing.T) {
	c := dynamotable.Identity{Started: "started_at"}
	item := map[string]types.AttributeValue{}
	c.Put(item, process.Identity{PID: 7})
	if want := map[string]types.AttributeValue{"pid": &types.AttributeValueMemberN{Value: "7"}}; !reflect.DeepEqual(item, want) {
		t.Errorf("Put wrote %#v, want only the pid", item)
	}
	if got := c.Of(item); got != (process.Identity{PID: 7}) {
		t.Errorf("Of = %+v", got)
	}
}
