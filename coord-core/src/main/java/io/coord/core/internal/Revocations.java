package io.coord.core.internal;

import io.coord.core.CoordinationException;
import io.coord.core.LeasePredicate;
import io.coord.core.Participant;
import io.coord.core.SequenceNode;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.api.transaction.CuratorOp;
import org.apache.curator.framework.imps.CuratorFrameworkState;
import org.apache.curator.utils.ZKPaths;
import org.apache.zookeeper.KeeperException;
import org.apache.zookeeper.data.Stat;

/**
 * The asking side of revocation: find whether a participant holds, then write the request on its node, or delete its
 * nodes. The holder's side is {@link RevocationWatch}.
 */
final class Revocations {
    /**
     * What a request writes on the holder's node: the bytes Curator's {@code Revoker.attemptRevoke} writes and its
     * revocable locks compare against, so that requests go both ways between coord and Curator.
     */
    static final byte[] MARKER = "__REVOKE__".getBytes(StandardCharsets.US_ASCII);

    private Revocations() {}

    /** Whether a node's data and data version make it a revocation request; version 0 is the data it was born with. */
    static boolean isRequest(byte[] data, Stat stat) {
        return stat != null && stat.getVersion() > 0 && Arrays.equals(data, MARKER);
    }

    /**
     * Revokes {@code holder}'s hold on the queue at {@code path}, if the queue says it holds: asks it ({@code force}
     * false) or deletes its nodes. Returns whether it held and was revoked.
     */
    static boolean revoke(
            CuratorFramework client,
            String path,
            String prefix,
            LeasePredicate predicate,
            Participant holder,
            boolean force) {
        SequenceNode target = target(path, prefix, holder);
        List<SequenceNode> lease =
                call(client, "read the queue of", path, () -> heldLease(client, path, predicate, target));
        if (lease.isEmpty()) {
            return false;
        }
        if (force) {
            boolean deleted =
                    call(client, "delete the nodes of", node(path, target), () -> delete(client, path, lease));
            // Gone, by this call or before it (by an earlier try of it whose reply was lost, say): a lease of this very
            // client learns it now, as from a deletion heard, since its view, if any, may be off. A transaction of
            // several that found one node missing deleted none, and says nothing of the others.
            if (deleted || lease.size() == 1) {
                ClientContext context = ClientContext.of(client);
                lease.forEach(node -> context.leases().nodeDeleted(node(path, node)));
            }
            return deleted;
        }
        String first = node(path, lease.get(0));
        return call(client, "request revocation of", first, () -> mark(client, first));
    }

    /** Checks {@code holder} before anything is read or written: it must name a node of this queue's kind. */
    static SequenceNode target(String path, String prefix, Participant holder) {
        Objects.requireNonNull(holder, "holder must not be null");
        String name = holder.nodeName();
        Optional<SequenceNode> node = name.contains("/") ? Optional.empty() : SequenceNode.parse(name);
        if (node.isEmpty() || !node.get().prefix().equals(prefix)) {
            throw new IllegalArgumentException("participant " + holder + " names no " + prefix + " node under " + path
                    + ", the only kind this primitive revokes");
        }
        return node.get();
    }

    /**
     * The nodes of {@code target}'s lease in sequence order, if the predicate grants it now; empty if it waits or is
     * gone. A lease of several nodes was created in one transaction, so its nodes share their protection id, and the
     * last of them is the one the predicate places.
     */
    private static List<SequenceNode> heldLease(
            CuratorFramework client, String path, LeasePredicate predicate, SequenceNode target) throws Exception {
        ClientContext context = ClientContext.of(client);
        if (context.deletes().isLeaving(path, target)) {
            return List.of(); // released, or withdrawn, by this client: its delete is on its way
        }
        // Decided as the target's owner decides. A lease of this client is judged as its contenders judge, passing by
        // its own nodes on their way out; another client still counts those nodes, and waits behind them.
        List<SequenceNode> queue = new ArrayList<>(Participants.queue(client, path));
        if (context.deletes().anyLeaving(path) && context.leases().holds(path, target)) {
            queue.removeIf(node -> context.deletes().isLeaving(path, node));
        }
        if (!queue.contains(target)) {
            return List.of();
        }
        Optional<String> id = target.protectionId();
        List<SequenceNode> lease = new ArrayList<>(1);
        for (SequenceNode node : queue) {
            boolean sameLease = id.isPresent()
                    ? id.equals(node.protectionId()) && node.prefix().equals(target.prefix())
                    : node.equals(target);
            if (sameLease) {
                lease.add(node);
            }
        }
        int last = queue.indexOf(lease.get(lease.size() - 1));
        boolean holds = predicate.evaluate(queue.subList(0, last + 1), last).granted();
        return holds ? List.copyOf(lease) : List.of();
    }

    /**
     * Writes the request, conditional on the version just read: a write that Curator retries after its reply was
     * lost then fails instead of reaching the holder twice, and the data read back tells that it landed.
     */
    private static boolean mark(CuratorFramework client, String node) throws Exception {
        while (true) {
            Stat stat = client.checkExists().forPath(node);
            if (stat == null) {
                return false; // released between the two reads
            }
            try {
                client.setData().withVersion(stat.getVersion()).forPath(node, MARKER);
                return true;
            } catch (KeeperException.NoNodeException e) {
                return false;
            } catch (KeeperException.BadVersionException e) {
                Stat now = new Stat();
                byte[] data;
                try {
                    data = client.getData().storingStatIn(now).forPath(node);
                } catch (KeeperException.NoNodeException gone) {
                    return false;
                }
                if (isRequest(data, now)) {
                    return true; // ours, landed before a lost reply, or another asker's: the holder is asked
                }
                // Some other write came in between: look again.
            }
        }
    }

    /** Deletes every node of the lease in one transaction, so that a multi-node lease never half survives. */
    private static boolean delete(CuratorFramework client, String path, List<SequenceNode> lease) throws Exception {
        try {
            if (lease.size() == 1) {
                client.delete().forPath(node(path, lease.get(0)));
            } else {
                List<CuratorOp> deletes = new ArrayList<>(lease.size());
                for (SequenceNode node : lease) {
                    deletes.add(TransactionOps.delete(client, node(path, node)));
                }
                client.transaction().forOperations(deletes);
            }
            return true;
        } catch (KeeperException.NoNodeException e) {
            return false; // released, lost, or deleted by an earlier try of this very delete whose reply was lost
        }
    }

    private static String node(String path, SequenceNode node) {
        return ZKPaths.makePath(path, node.name());
    }

    @FunctionalInterface
    private interface Call<T> {
        T run() throws Exception;
    }

    /**
     * Runs one step against ZooKeeper; whatever it throws becomes an unchecked error naming {@code path}. Curator tells
     * of a close during the step with {@link IllegalStateException}, which to coord's callers means a client never
     * started: that becomes a {@link CoordinationException} too.
     */
    private static <T> T call(CuratorFramework client, String what, String path, Call<T> step) {
        try {
            return step.run();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new CoordinationException("interrupted while trying to " + what + " " + path, e);
        } catch (KeeperException e) {
            throw new CoordinationException("cannot " + what + " " + path + ": " + e.code(), e);
        } catch (IllegalStateException e) {
            if (client.getState() != CuratorFrameworkState.STOPPED) {
                throw e;
            }
            throw new CoordinationException("cannot " + what + " " + path + ": the client was closed", e);
        } catch (RuntimeException e) {
            throw e;
        } catch (Exception e) {
            throw new CoordinationException("cannot " + what + " " + path + ": " + e, e);
        }
    }
}
