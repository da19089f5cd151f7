package dynamotable_test

import (
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/millfleet/mill/pkg/dynamotable"
)

func TestItemReadsWhatTheEncodersWrite(t *testing.T) {
	at := time.Date(2026, 3, 4, 5, 6, 7, 890_000_000, time.UTC)
	it := dynamotable.Item{
		"s":    dynamotable.S("x"),
		"n":    dynamotable.N(-42),
		"sec":  dynamotable.Unix(at),
		"ms":   dynamotable.UnixMilli(at),
		"list": dynamotable.Strings([]string{"a", "b"}),
		"m":    &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{"k": dynamotable.N(7)}},
	}
	if got := it.S("s"); got != "x" {
		t.Errorf("S = %q", got)
	}
	if got := it.N("n"); got != -42 {
		t.Errorf("N = %d", got)
	}
	if got, want := it.Unix("sec"), at.Truncate(time.Second); !got.Equal(want) || got.Location() != time.UTC {
		t.Errorf("Unix = %v, want %v UTC", got, want)
	}
	if got, want := it.UnixMilli("ms"), at.Truncate(time.Millisecond); !got.Equal(want) || got.Location() != time.UTC {
		t.Errorf("UnixMilli = %v, want %v UTC", got, want)
	}
	if got := it.Strings("list"); !reflect.DeepEqual(got, []string{"a", "b"}) {
		t.Errorf("Strings = %q", got)
	}
	if got := it.M("m").N("k"); got != 7 {
		t.Errorf("M.N = %d", got)
	}
	if v, ok := dynamotable.Unix(at).(*types.AttributeValueMemberN); !ok || v.Value != fmt.Sprint(at.Unix()) {
		t.Errorf("Unix(at) = %#v, want N %d", dynamotable.Unix(at), at.Unix())
	}
}

// An item edited by hand (missing or mistyped attributes, odd list
// elements) reads as zeros rather than failing.
func TestItemReadsMalformedAsZero(t *testing.T) {
	it := dynamotable.Item{
		"s":    dynamotable.N(1),
		"n":    dynamotable.S("1"),
		"bad":  &types.AttributeValueMemberN{Value: "1.5e3x"},
		"zero": dynamotable.N(0),
		"list": &types.AttributeValueMemberL{Value: []types.AttributeValue{dynamotable.N(1), dynamotable.S("ok")}},
		"m":    dynamotable.S("not a map"),
	}
	if it.S("s") != "" || it.S("absent") != "" {
		t.Error("S of a number or an absent attribute is not empty")
	}
	if it.N("n") != 0 || it.N("bad") != 0 || it.N("absent") != 0 {
		t.Error("N of a string, a non-integer or an absent attribute is not 0")
	}
	if !it.Unix("zero").IsZero() || !it.UnixMilli("zero").IsZero() || !it.Unix("absent").IsZero() {
		t.Error("a time of 0 or absent is not the zero time")
	}
	if got := it.Strings("list"); !reflect.DeepEqual(got, []string{"ok"}) {
		t.Errorf("Strings kept %q, want only the string element", got)
	}
	if it.Strings("absent") != nil || it.M("m") != nil || it.M("m").N("k") != 0 {
		t.Error("an absent list or a non-map reads as something")
	}
}

func TestConditionFailed(t *testing.T) {
	old := map[string]types.AttributeValue{"holder": dynamotable.S("h")}
	if found, ok := dynamotable.ConditionFailed(fmt.Errorf("put: %w", &types.ConditionalCheckFailedException{Item: old})); !ok || found.S("holder") != "h" {
		t.Errorf("wrapped condition failure = %v, %v; want the old item, true", found, ok)
	}
	if found, ok := dynamotable.ConditionFailed(&types.ConditionalCheckFailedException{}); !ok || len(found) != 0 {
		t.Errorf("condition failure without item = %v, %v; want none, true", found, ok)
	}
	for _, err := range []error{nil, errors.New("throttled"), &types.ResourceNotFoundException{}} {
		if _, ok := dynamotable.ConditionFailed(err); ok {
			t.Errorf("ConditionFailed(%v) = true", err)
		}
	}
}
