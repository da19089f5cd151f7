// Package endpoint holds Mill's rules for the S3 endpoints of stores (the
// "endpoint" field of accounts.json; docs/ARCHITECTURE.md, Stores and
// storage providers), so that no registry entry can lead Mill — or the
// credentials it signs requests with — somewhere it must not go.
//
//   - Check validates an endpoint URL: http or https, no credentials in
//     it, https unless the host is loopback (an emulator on this machine)
//     or the store sets allowInsecureEndpoint, and no link-local or cloud
//     metadata address.
//   - Forbidden names the addresses no store may reach: IPv4 link-local
//     169.254.0.0/16 (the AWS, Azure, GCP and Oracle instance metadata
//     services at 169.254.169.254, the ECS task metadata endpoint),
//     IPv6 link-local fe80::/10, the AWS IPv6 metadata address
//     fd00:ec2::254 and Alibaba Cloud's 100.100.100.200, also in their
//     IPv4-mapped and NAT64 forms.
//   - A host name is checked when Mill connects, not only when the
//     registry is read, so DNS cannot be made to answer differently later
//     (DNS rebinding): HTTPClient's dialer refuses Forbidden addresses in
//     its Control hook, which sees the address actually dialled; behind a
//     proxy, the endpoint's addresses are resolved and checked before the
//     request goes to the proxy. The SDK client does not follow redirects.
//   - AWS tells an AWS endpoint (https, a host under amazonaws.com,
//     amazonaws.com.cn or api.aws) from any other: only AWS endpoints get
//     the default credential chain's credentials without the store saying
//     so (see pkg/stores).
package endpoint
