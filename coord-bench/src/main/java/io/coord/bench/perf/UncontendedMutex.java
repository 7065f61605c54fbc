package io.coord.bench.perf;

import io.coord.bench.Safety;
import io.coord.mutex.ReentrantMutex;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.zookeeper.AddWatchMode;
import org.apache.zookeeper.CreateMode;
import org.apache.zookeeper.KeeperException;
import org.apache.zookeeper.Watcher;
import org.apache.zookeeper.Watcher.WatcherType;

/**
 * Scenario 1: one session takes and returns a free mutex, back to back. With its view primed coord sends a create to
 * enter and a delete to leave, and does not wait for the delete; InterProcessMutex waits for a create, a getChildren
 * and a delete in a row.
 *
 * <p>A third line measures the floor, no lock at all: the two writes every ZooKeeper lock needs, issued as coord
 * issues them (the delete of the last node sent, then the next create awaited), on the same session. It says how much
 * of a cycle is coord's own work and how much is the ensemble's commit of two writes, which no client can go below.
 * A fourth line is the same floor under a persistent recursive watch, as a view keeps one: the events for the
 * client's own create and delete are part of any 2-request cycle that knows the queue without reading it.
 */
final class UncontendedMutex implements Scenario {
    // This scenario runs first, in a cold JVM: each side's own code must be compiled before the clock runs, or the
    // figures measure the interpreter. After 30 cycles coord's engine was still mostly interpreted (in one JVM its
    // median acquire took 3.4 ms over the first 500 cycles and 1.2 ms over the third 500); 1,500 per side settle both.
    private static final int WARM_UP = 1_500;

    @Override
    public String id() {
        return "1";
    }

    @Override
    public String title() {
        return "uncontended mutex acquire+release (vs InterProcessMutex)";
    }

    @Override
    public List<Row> run(BenchContext ctx) throws Exception {
        CuratorFramework client = ctx.sessions(1).get(0);
        ReentrantMutex coordLock = new ReentrantMutex(client, ctx.path("s1", "coord"));
        InterProcessMutex curatorLock = new InterProcessMutex(client, ctx.path("s1", "curator"));
        Safety.Guard coordGuard = ctx.safety().guard("1 coord ReentrantMutex", 1);
        Safety.Guard curatorGuard = ctx.safety().guard("1 Curator InterProcessMutex", 1);
        Load.Op coordOp = () -> {
            coordLock.acquire();
            try {
                coordGuard.enter(coordLock.lease().fencingToken());
                coordGuard.exit();
            } finally {
                coordLock.release();
            }
        };
        Load.Op curatorOp = () -> {
            curatorLock.acquire();
            try {
                curatorGuard.enter();
                curatorGuard.exit();
            } finally {
                curatorLock.release();
            }
        };
        AtomicReference<String> lastNode = new AtomicReference<>();
        AtomicReference<String> lastWatchedNode = new AtomicReference<>();
        String watchedParent = ctx.path("s1", "watched-floor");
        Load.Op floorOp = floorOp(client, ctx.path("s1", "floor"), lastNode);
        Load.Op watchedFloorOp = floorOp(client, watchedParent, lastWatchedNode);
        // Unmeasured: creates the parents and lets the JIT see every code path before the clock runs.
        Sample discard = new Sample("warm-up");
        Load.sequential(ctx, discard, coordOp, WARM_UP);
        Load.sequential(ctx, discard, curatorOp, WARM_UP);
        Load.sequential(ctx, discard, floorOp, WARM_UP);
        Watcher ignoring = event -> {};
        client.watchers()
                .add()
                .withMode(AddWatchMode.PERSISTENT_RECURSIVE)
                .usingWatcher(ignoring)
                .forPath(watchedParent);
        Load.sequential(ctx, discard, watchedFloorOp, WARM_UP);

        Sample coord = new Sample("coord ReentrantMutex");
        Sample curator = new Sample("Curator InterProcessMutex");
        Sample floor = new Sample("floor: create + pipelined delete, no lock");
        Sample watchedFloor = new Sample("floor under a persistent recursive watch");
        // Short windows, many turns: drift hits both sides alike. --quick keeps it short.
        int rounds = ctx.plan().quick() ? ctx.plan().rounds() : ctx.plan().rounds() * 2;
        int ops = ctx.plan().uncontendedOps();
        Rounds.run(
                ctx,
                "1 uncontended mutex",
                rounds,
                List.of(
                        () -> Load.sequential(ctx, coord, coordOp, ops),
                        () -> Load.sequential(ctx, curator, curatorOp, ops),
                        () -> Load.sequential(ctx, floor, floorOp, ops),
                        () -> Load.sequential(ctx, watchedFloor, watchedFloorOp, ops)));
        try {
            client.watchers()
                    .removeAll()
                    .ofType(WatcherType.PersistentRecursive)
                    .forPath(watchedParent);
        } catch (KeeperException e) {
            // A server before 3.9 cannot remove a persistent watch by type: it goes with the session at the run's end.
        }
        for (AtomicReference<String> last : List.of(lastNode, lastWatchedNode)) {
            String node = last.getAndSet(null);
            if (node != null) {
                client.delete().forPath(node);
            }
        }
        return List.of(new Row(
                id(),
                title(),
                "1 session",
                coord.figures(),
                List.of(curator.figures(), floor.figures(), watchedFloor.figures())));
    }

    /** The floor's cycle under {@code parent}: the delete of the last node sent, then the next create awaited. */
    private static Load.Op floorOp(CuratorFramework client, String parent, AtomicReference<String> lastNode) {
        String prefix = parent + "/n-";
        return () -> {
            String previous = lastNode.getAndSet(null);
            if (previous != null) {
                client.delete().inBackground().forPath(previous);
            }
            lastNode.set(createAndWait(client, prefix));
        };
    }

    /** Creates an EPHEMERAL_SEQUENTIAL node in the background and waits for the reply, as coord's acquire does. */
    private static String createAndWait(CuratorFramework client, String prefix) throws Exception {
        CompletableFuture<String> created = new CompletableFuture<>();
        client.create()
                .creatingParentContainersIfNeeded()
                .withMode(CreateMode.EPHEMERAL_SEQUENTIAL)
                .inBackground((c, event) -> {
                    KeeperException.Code rc = KeeperException.Code.get(event.getResultCode());
                    if (rc == KeeperException.Code.OK) {
                        created.complete(event.getName());
                    } else {
                        created.completeExceptionally(KeeperException.create(rc, prefix));
                    }
                })
                .forPath(prefix);
        return created.get();
    }
}
