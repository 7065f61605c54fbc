package io.coord.core.internal;

import java.time.Duration;
import java.util.List;
import java.util.Set;
import java.util.concurrent.locks.ReentrantLock;
import org.apache.zookeeper.KeeperException.Code;
import org.apache.zookeeper.Op;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What one client's server can do, as its answers tell: whether it knows the requests of ZooKeeper 3.6 (persistent
 * watches, read-only multis), whether it can remove a persistent watch (3.9), and whether its watch manager holds
 * persistent watches at all. Servers older than those answer in ways that look like faults, so every verdict here
 * comes from an answer that only such a server gives.
 */
public final class ServerSupport {
    private static final Logger log = LoggerFactory.getLogger(ServerSupport.class);
    // Connections that broke under a request of ZooKeeper 3.6, before the server carried out one: an older server.
    private static final int LOSSES_OF_AN_OLDER_SERVER = 3;
    // After a guess from lost connections, one read-only multi sent alone asks the server itself: this long after the
    // guess, and after each probe lost in turn. After the last, the guess stands.
    private static final List<Duration> PROBE_PAUSES =
            List.of(Duration.ofSeconds(5), Duration.ofMinutes(1), Duration.ofMinutes(5));
    // What newerRequestSent gives while the client is not connected; never a connection epoch.
    private static final long NO_CONNECTION = -1;
    // Answers that only a server that knows a 3.6 request gives: it carried it out, or turned it down on its merits.
    private static final Set<Code> SERVERS_OWN_ANSWERS =
            Set.of(Code.OK, Code.THROTTLEDOP, Code.MARSHALLINGERROR, Code.NOAUTH, Code.NONODE, Code.BADARGUMENTS);

    private final ClientContext context;
    private final ReentrantLock lock = new ReentrantLock();
    // Written under lock (see answeredAsOlderServer): what the server's answers to 3.6 requests tell of it.
    private volatile boolean olderServer; // it answered one UNIMPLEMENTED, or broke the connection under each
    private volatile boolean olderServerGuessed; // olderServer from connections lost, not from an answer
    private volatile boolean newerServer; // it carried one out
    // Guarded by lock: the connections that broke under a 3.6 request, and the last one counted.
    private int newerRequestLosses;
    private long newerRequestLostOn = NO_CONNECTION;
    private volatile boolean persistentWatchesStay; // it cannot remove a persistent watch on its own (3.6 to 3.8)
    private volatile boolean persistentWatchesRefused; // its watch manager cannot hold persistent watches at all

    ServerSupport(ClientContext context) {
        this.context = context;
    }

    /** Whether the server can keep and remove the persistent recursive watch of a view. */
    boolean takesViews() {
        return !olderServer && !persistentWatchesStay && !persistentWatchesRefused;
    }

    /**
     * The server could not add a persistent watch, though it knows the request: ZooKeeper's optional watch manager
     * {@code WatchManagerOptimized} ({@code zookeeper.watchManagerName}) holds none, and the server answers such an
     * add MARSHALLINGERROR. From now on this client uses no view, rather than try one, and fail, per path.
     */
    void persistentWatchesRefused() {
        if (!persistentWatchesRefused) {
            persistentWatchesRefused = true;
            log.info("ZooKeeper could not add a persistent watch (MARSHALLINGERROR: a server whose watch manager holds"
                    + " none, such as WatchManagerOptimized): coord uses predecessor watches on this client");
        }
    }

    /** Whether the server refused to remove a persistent watch on its own (3.6 to 3.8): set ones stay. */
    public boolean persistentWatchesStay() {
        return persistentWatchesStay;
    }

    /**
     * The server could not read a removal of persistent watches: a server of 3.6 to 3.8 adds them but removes watches
     * only by the types it knew before (Data, Children, Any), and Any would take the watches of everyone else on this
     * connection and path too. So the watch stays until the session ends, and from now on this client takes no view,
     * so that no more stay behind.
     */
    void persistentWatchRemovalRefused(String path) {
        if (!persistentWatchesStay) {
            persistentWatchesStay = true;
            log.info(
                    "ZooKeeper could not remove the persistent watch on {} (a server before 3.9): coord uses"
                            + " predecessor watches on this client from now on, and the persistent watches it has"
                            + " set stay until the session ends",
                    path);
        }
    }

    /** Whether the server is taken for one before 3.6 (see {@link #answeredAsOlderServer}). */
    public boolean hasOlderServer() {
        return olderServer;
    }

    /** Whether the server said it is older than 3.6 (it answered UNIMPLEMENTED), rather than only seemed so. */
    public boolean saidItIsOlder() {
        return olderServer && !olderServerGuessed;
    }

    /**
     * The connection a request of ZooKeeper 3.6 (addWatch, a read-only multi) sent now goes out on, for {@link
     * #answeredAsOlderServer}; none while the client is not connected, nor once the server is known to be newer, when
     * nothing counts losses any more (every queue read and view add asks: no lock then).
     */
    public long newerRequestSent() {
        return newerServer ? NO_CONNECTION : context.connectionIfUp(NO_CONNECTION);
    }

    /**
     * What the answer {@code rc} to a request of ZooKeeper 3.6 sent on connection {@code sent} ({@link
     * #newerRequestSent}) tells of the server: true if it is taken for one before 3.6. From then on this client uses
     * no view, and reads nodes one by one where it would read them in one multi.
     *
     * <p>Such a server answers the request UNIMPLEMENTED at once, ahead of the client's requests still in its pipeline,
     * and drops the connection. Behind a write, the client takes that answer out of turn for a broken connection, and
     * the request comes back lost. So until the server has carried out one, the third connection that was up when
     * such a request went out and broke under it marks an older server too. A later answer from the server itself
     * takes that guess back, or makes it certain: one to a probe sent alone a while after the guess (see
     * {@link #probeLater}).
     */
    public boolean answeredAsOlderServer(Code rc, long sent) {
        if (newerServer && rc != Code.UNIMPLEMENTED) {
            return olderServer; // known, and no guess left to take back: nothing to count, nor to lock for
        }
        boolean older;
        boolean wasOlder;
        boolean guessed;
        boolean guessTakenBack = false;
        lock.lock();
        try {
            wasOlder = olderServer;
            if (rc == Code.UNIMPLEMENTED) {
                olderServerGuessed = false;
                olderServer = true;
            } else if (rc == Code.CONNECTIONLOSS) {
                if (!olderServer && !newerServer && brokeUnderNewerRequest(sent)) {
                    olderServerGuessed = true;
                    olderServer = true;
                }
            } else if (rc != null && SERVERS_OWN_ANSWERS.contains(rc)) {
                newerServer = true;
                guessTakenBack = olderServerGuessed;
                olderServer &= !olderServerGuessed;
                olderServerGuessed = false;
            } // else no news of the server: of the session, or from the client itself
            older = olderServer;
            guessed = olderServerGuessed;
        } finally {
            lock.unlock();
        }
        if (guessed && !wasOlder) {
            probeLater(0);
        }
        if (older && !wasOlder) {
            log.info("ZooKeeper answered a 3.6 request UNIMPLEMENTED, or broke the connection under each (a server"
                    + " before 3.6): coord uses predecessor watches and reads nodes one by one on this client");
        } else if (guessTakenBack) {
            log.info("ZooKeeper carried out a 3.6 request after all: coord uses views again on this client");
        }
        return older;
    }

    /**
     * Asks the server itself once the guess of an older server has stood for the {@code n}th pause: connections lost
     * under a view's adds (a client whose retries give up, on a flapping network) look like an older server's breaks.
     * The probe, a read-only multi of {@code /}, goes alone on a settled connection, where an older server answers it
     * UNIMPLEMENTED in its turn (and breaks that connection once more), and a newer one carries it out.
     */
    private void probeLater(int n) {
        if (n < PROBE_PAUSES.size()) {
            context.track(Executors.after(PROBE_PAUSES.get(n))).thenRun(() -> sendOnSettledConnection(() -> probe(n)));
        }
    }

    private void probe(int n) {
        if (!olderServerGuessed) {
            return; // decided meanwhile
        }
        long sent = newerRequestSent();
        try {
            context.client()
                    .getZookeeperClient()
                    .getZooKeeper()
                    .multi(
                            List.of(Op.getData("/")),
                            (rc, path, ctx, results) -> {
                                answeredAsOlderServer(results != null ? Code.OK : Code.get(rc), sent);
                                if (olderServerGuessed) {
                                    probeLater(n + 1);
                                }
                            },
                            null);
        } catch (Exception e) {
            if (context.isClosed()) {
                log.debug("the probe of the server's release was not sent: the client is closed", e);
            } else {
                log.debug("the probe of the server's release was not sent: the handle refused it", e);
                probeLater(n + 1);
            }
        }
    }

    /** Under lock: counts connection {@code sent} as broken under a 3.6 request, once; true once enough did. */
    private boolean brokeUnderNewerRequest(long sent) {
        if (sent == NO_CONNECTION || sent <= newerRequestLostOn) {
            return false; // sent while not connected, or on a connection counted already
        }
        newerRequestLostOn = sent;
        return ++newerRequestLosses >= LOSSES_OF_AN_OLDER_SERVER;
    }

    /**
     * Sends again, as {@link ClientContext#sendAgain} does, a request of ZooKeeper 3.6 that failed with {@code rc}, a
     * passing failure; but until the server has carried out one, a lost one goes only once a connection has been up
     * for a pause. Sent as a connection comes up, it would follow the writes Curator and coord send again then, and a
     * server before 3.6 would answer it ahead of them and break the connection again, each time (see {@link
     * #answeredAsOlderServer}). The first pause lets news of the drop come: a loss is told before it.
     */
    public void sendNewerAgain(Code rc, Runnable send) {
        if (newerServer || rc != Code.CONNECTIONLOSS) {
            context.sendAgain(rc, send);
        } else {
            context.throttledPause().thenRun(() -> sendOnSettledConnection(send));
        }
    }

    private void sendOnSettledConnection(Runnable send) {
        context.whenConnected(() -> {
            Duration settled = ClientContext.THROTTLED_PAUSE;
            Duration up = context.connectedFor();
            if (up.compareTo(settled) >= 0) {
                send.run();
            } else {
                context.track(Executors.after(settled.minus(up))).thenRun(() -> sendOnSettledConnection(send));
            }
        });
    }
}
