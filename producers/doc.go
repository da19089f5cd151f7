// Package producers holds Mill's looping task producers: the framework in
// producers/looping and the concrete duplication and bit-integrity
// producers built on it (docs/ARCHITECTURE.md, Looping producers).
package producers
