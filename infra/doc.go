// Package infra holds Mill's CloudFormation templates (core.yaml, alarms.yaml,
// workman.yaml, producers.yaml, console.yaml, and evidence.yaml: the evidence
// log's Object Lock bucket, a stack apart), the cfn-lint wrapper (lint.sh) and the tests
// that check them: that the core template deploys to the local AWS emulator
// and creates what Mill's code expects, and that the templates name the same
// queues, tables and attributes as the code. There is no Go API here; see
// README.md in this directory for deployment.
package infra
