package io.coord.testkit;

import io.coord.core.internal.ClientContext;
import org.apache.curator.framework.CuratorFramework;

/**
 * The two ways the lease engine learns a queue, for suites that run in both: the client's view of the path (one
 * persistent watch, the default), or predecessor watches, which is what a client falls back to when it cannot or
 * should not keep a view (system property {@code coord.view=off}).
 */
public enum EngineMode {
    VIEW,
    WATCH;

    /** Makes {@code client} use this mode from now on. */
    public void apply(CuratorFramework client) {
        ClientContext context = ClientContext.of(client);
        context.configureViews(context.viewSettings().withEnabled(this == VIEW));
    }

    /** The value of the {@code coord.view} system property that selects this mode. */
    public String property() {
        return this == VIEW ? "on" : "off";
    }
}
