package io.coord.it;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.function.Consumer;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.recipes.leader.LeaderLatch;
import org.apache.curator.framework.recipes.leader.LeaderLatchListener;

/**
 * A place in an election for Curator's {@link LeaderLatch}, which cannot give up a term and stay in: to step down, it
 * leaves and joins again with a new latch. Each term is told to {@code onLead}, and handed to {@code stepDownLater},
 * which runs the step-down it is given whenever it sees fit (or never).
 */
final class CuratorLatchSeat {
    private final CuratorFramework client;
    private final String path;
    private final String id;
    private final Timeline timeline;
    private final Runnable onLead;
    private final Consumer<Runnable> stepDownLater;
    private volatile LeaderLatch latch;

    CuratorLatchSeat(
            CuratorFramework client,
            String path,
            String id,
            Timeline timeline,
            Runnable onLead,
            Consumer<Runnable> stepDownLater) {
        this.client = client;
        this.path = path;
        this.id = id;
        this.timeline = timeline;
        this.onLead = onLead;
        this.stepDownLater = stepDownLater;
    }

    /** Joins the election with a new latch. */
    void start() {
        LeaderLatch next = new LeaderLatch(client, path, id);
        next.addListener(new LeaderLatchListener() {
            @Override
            public void isLeader() {
                onLead.run();
                timeline.add(id + " leads (Curator)");
                stepDownLater.accept(() -> stepDown(next));
            }

            @Override
            public void notLeader() {
                timeline.add(id + " no longer leads (Curator)");
            }
        });
        latch = next;
        try {
            next.start();
        } catch (Exception e) {
            throw new IllegalStateException("cannot start Curator's latch " + id, e);
        }
    }

    String id() {
        return id;
    }

    boolean hasLeadership() {
        return latch.hasLeadership();
    }

    /** Leaves the election. */
    void close() {
        try {
            latch.close();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private void stepDown(LeaderLatch leading) {
        if (latch != leading) {
            return; // that term is long over
        }
        timeline.add(id + " steps down (Curator)");
        close();
        start();
    }
}
