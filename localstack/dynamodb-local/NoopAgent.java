// LocalStack starts DynamoDB Local with -javaagent pointing at a patch agent of
// its own (it lifts DynamoDB Local's limit of 20 global secondary indexes per
// table), which it downloads from GitHub. Mill's tables have at most one index,
// so localstack/host.sh installs this agent in its place: it does nothing.
public final class NoopAgent {
    private NoopAgent() {}

    public static void premain(String args, java.lang.instrument.Instrumentation inst) {}
}
