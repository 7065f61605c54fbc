package io.coord.testkit;

import java.lang.reflect.Field;
import java.lang.reflect.Method;
import java.util.Collection;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.atomic.AtomicBoolean;
import org.apache.curator.test.TestingZooKeeperServer;

/**
 * The watches a server holds that its four-letter words leave out. {@code wchp} lists the data tree's data watches,
 * persistent ones included, but not the children watches a {@code getChildren} leaves, which only the server's data
 * tree knows; the kit reads them there, in process, through methods and fields of ZooKeeper 3.9 and curator-test 5
 * that are not theirs to promise. Where those differ, it says so once and counts none.
 */
final class ServerWatches {
    private static final AtomicBoolean WARNED = new AtomicBoolean();

    private ServerWatches() {}

    /** For each path with children watches on {@code server}, the sessions that watch it ({@code 0x...}, as wchp). */
    static Map<String, Set<String>> childWatches(TestingZooKeeperServer server) {
        Map<String, Set<String>> counts = new LinkedHashMap<>();
        try {
            Object embedded = call(server, TestingZooKeeperServer.class, "getMain");
            Object connections = call(embedded, embedded.getClass(), "getServerCnxnFactory");
            Object serving =
                    connections == null ? null : call(connections, connections.getClass(), "getZooKeeperServer");
            Object database = serving == null ? null : call(serving, serving.getClass(), "getZKDatabase");
            if (database == null) {
                return counts; // between roles: nothing serves clients, and none of their watches is set here
            }
            Object tree = call(database, database.getClass(), "getDataTree");
            Field childWatches = tree.getClass().getDeclaredField("childWatches");
            childWatches.setAccessible(true);
            Object watches = childWatches.get(tree);
            Object report = call(watches, watches.getClass(), "getWatchesByPath");
            Map<?, ?> byPath = (Map<?, ?>) call(report, report.getClass(), "toMap");
            byPath.forEach((path, sessions) -> {
                Set<String> ids = new HashSet<>();
                ((Collection<?>) sessions).forEach(id -> ids.add("0x" + Long.toHexString((Long) id)));
                counts.put((String) path, ids);
            });
        } catch (ReflectiveOperationException | RuntimeException e) {
            if (WARNED.compareAndSet(false, true)) {
                System.getLogger(ServerWatches.class.getName())
                        .log(
                                System.Logger.Level.WARNING,
                                "coord-testkit cannot read the children watches of " + server.getInstanceSpec()
                                        + ": its leak checks count data and persistent watches only",
                                e);
            }
        }
        return counts;
    }

    /** Calls the no-argument method {@code name} that {@code type} or a superclass declares. */
    private static Object call(Object target, Class<?> type, String name) throws ReflectiveOperationException {
        for (Class<?> c = type; c != null; c = c.getSuperclass()) {
            try {
                Method method = c.getDeclaredMethod(name);
                method.setAccessible(true);
                return method.invoke(target);
            } catch (NoSuchMethodException e) {
                // declared higher up
            }
        }
        throw new NoSuchMethodException(type.getName() + "." + name + "()");
    }
}
