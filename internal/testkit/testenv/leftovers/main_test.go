package main

import (
	"slices"
	"testing"
)

func TestLeftovers(t *testing.T) {
	before := []resource{{"S3 bucket", "mill-config"}, {"S3 bucket", "t0a1b2c3d4e-state"}}
	after := []resource{
		{"S3 bucket", "mill-config"},           // there before
		{"S3 bucket", "t0a1b2c3d4e-state"},     // there before, another run's
		{"S3 bucket", "mill-state"},            // new, a default name
		{"SQS queue", "tbeef0a1b2c3d4e-audit"}, // this run's
		{"PostgreSQL schema", "t_beef0a1b2c3d4e"},
		{"SQS queue", "tcafe0a1b2c3d4e-audit"}, // another tagged run's
		{"SQS queue", "tbeef0a1b2c-audit"},     // an untagged run's that starts like the tag
		{"DynamoDB table", "t_5f6e7d8c9b"},     // an untagged run's schema
		{"S3 bucket", "milltest-0a1b2c3d4e-x"}, // a real-AWS run's
		{"S3 bucket", "tbeef-mine"},            // no test's name
	}
	got := leftovers(before, after, "beef")
	want := []resource{{"S3 bucket", "mill-state"}, {"SQS queue", "tbeef0a1b2c3d4e-audit"},
		{"PostgreSQL schema", "t_beef0a1b2c3d4e"}, {"S3 bucket", "tbeef-mine"}}
	if !slices.Equal(got, want) {
		t.Errorf("leftovers:\n got %v\nwant %v", got, want)
	}
}
