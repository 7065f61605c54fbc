package io.coord.queue;

import io.coord.core.internal.ClientContext;
import io.coord.core.internal.ClientContext.SessionEvent;
import io.coord.core.internal.SingleFlight;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.api.CuratorEvent;
import org.apache.zookeeper.KeeperException.Code;
import org.apache.zookeeper.data.Stat;

/**
 * The state of one queue path in one client, shared by every {@link DistributedQueue} instance built on them: the
 * consumers' cached item names and watch, the producers' room watch and slots, and the coalesced size read. It is
 * kept in the client's {@link ClientContext}, which also tells it of every change of connection and session.
 */
final class SharedQueue {
    final ClientContext context;
    final Layout layout;
    final ItemsWatch items;
    final ClaimOps claims;
    final SessionMarker marker;
    final RoomWatch room;
    final ProducerSlots slots;
    /** The Stat of the items parent (null if it does not exist yet): numChildren is the size, cversion the sequence. */
    final SingleFlight<Stat> counts;

    private final AtomicReference<CompletableFuture<Void>> ensuring = new AtomicReference<>();

    /** The shared state of {@code path} on this context's client, made on first use; does no I/O. */
    static SharedQueue of(ClientContext context, String path) {
        return context.shared(SharedQueue.class.getName() + ":" + path, key -> {
            SharedQueue queue = new SharedQueue(context, path);
            context.addSessionListener(queue::sessionChanged);
            return queue;
        });
    }

    private SharedQueue(ClientContext context, String path) {
        this.context = context;
        this.layout = new Layout(path, context.client().getNamespace());
        this.items = new ItemsWatch(context, layout);
        this.claims = new ClaimOps(this);
        this.marker = new SessionMarker(this);
        this.room = new RoomWatch(context, layout.items());
        this.slots = new ProducerSlots(this);
        this.counts = new SingleFlight<>(this::readCount);
    }

    /** Creates the three parents if they are missing; they are never deleted by the queue. */
    CompletableFuture<Void> ensureLayout() {
        return CompletableFuture.allOf(ensure(layout.items()), ensure(layout.claims()), ensure(layout.sessions()));
    }

    /** On Curator's listener thread: only flips local state and wakes waiters, never blocks. */
    private void sessionChanged(SessionEvent event) {
        switch (event) {
            case SUSPENDED -> {} // watches and ephemeral znodes live on unless the session ends
            case RECONNECTED -> {
                // Same session: our claims and watches survived. Waiters look again, now that requests can go out.
                items.reconnected();
                room.connectionChanged(false);
            }
            case SESSION_ENDED, NEW_SESSION, CLOSED -> {
                // Our watches and claims died with the session; on close, waiters wake to fail on their next request.
                items.sessionEnded(context.sessionId());
                room.connectionChanged(true);
            }
        }
    }

    private CompletableFuture<Void> ensure(String parent) {
        CuratorFramework client = context.client();
        return Requests.call(
                        context,
                        parent,
                        cb -> client.create()
                                .creatingParentContainersIfNeeded()
                                .inBackground(cb)
                                .forPath(parent))
                .thenAccept(event -> {
                    Code code = Requests.code(event);
                    if (code != Code.OK && code != Code.NODEEXISTS) {
                        throw Requests.failure("creating", parent, code);
                    }
                });
    }

    private CompletableFuture<Stat> readCount() {
        return Requests.call(
                        context,
                        layout.items(),
                        cb -> context.client().checkExists().inBackground(cb).forPath(layout.items()))
                .thenApply(event -> switch (Requests.code(event)) {
                    case OK -> event.getStat();
                    case NONODE -> null;
                    default -> throw Requests.failure("reading the size of", layout.items(), Requests.code(event));
                });
    }

    /**
     * Reads claims/X with a watch, so that a claim held elsewhere brings the name back when it goes: getData, since
     * exists would leave a watch on a claim that is not there. The name is held out before the read, so a deletion
     * that fires the watch at once still finds it.
     */
    CuratorEvent readClaimWatched(String name) {
        items.names().watchClaim(name);
        String claimPath = layout.claim(name);
        return Requests.awaitFully(
                Requests.call(
                        context,
                        claimPath,
                        cb -> context.client()
                                .getData()
                                .usingWatcher(items.claimsWatcher())
                                .inBackground(cb)
                                .forPath(claimPath)),
                claimPath);
    }
}
