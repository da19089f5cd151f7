// Package storagetest is the conformance suite of storage.Provider. Every
// provider's tests call Run with a factory that builds a fresh, empty store
// for each subtest; capability fields of Harness adapt the suite to what a
// provider can do (large-object paths, property limits, corruption).
package storagetest
