// Package storagetest is the conformance suite of storage.Provider. Every
// provider's tests call Run with a Harness whose New builds a fresh, empty
// store for each subtest (a Fixture, with the hooks that reach behind it);
// the capability fields of Harness adapt the suite to what a provider can do
// (large-object paths, property limits, checksums).
package storagetest
