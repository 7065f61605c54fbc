package io.coord.bench.demo;

import io.coord.bench.Ensemble;
import java.io.PrintStream;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import org.apache.curator.framework.CuratorFramework;

/** The ensemble, a place to print, and fresh paths for the demo's scenarios. */
final class DemoContext {
    private final Ensemble ensemble;
    private final PrintStream out;
    private final String root;

    DemoContext(Ensemble ensemble, PrintStream out) {
        this.ensemble = ensemble;
        this.out = out;
        this.root = "/coord-demo/run-" + Long.toHexString(System.currentTimeMillis());
    }

    Ensemble ensemble() {
        return ensemble;
    }

    /** {@code n} started sessions, each a separate client as separate processes would have. */
    List<CuratorFramework> clients(int n) throws InterruptedException {
        List<CuratorFramework> clients = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            clients.add(ensemble.newClient());
        }
        return clients;
    }

    String root() {
        return root;
    }

    String path(String name) {
        return root + "/" + name;
    }

    /** Prints one narrated line; lines from many threads never interleave. */
    synchronized void say(String format, Object... args) {
        out.println("  " + String.format(Locale.ROOT, format, args));
    }
}
