package io.coord.core.internal;

import io.coord.core.CoordinationException;
import io.coord.core.Participant;
import io.coord.core.SequenceNode;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Optional;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.utils.ZKPaths;
import org.apache.zookeeper.KeeperException;
import org.apache.zookeeper.OpResult;

/**
 * Lists a queue's holders and waiters: one children read, then the nodes' data in one multi-read per {@link
 * MultiRead#readsPerReply} nodes (15 under the default {@code jute.maxbuffer}, since an id may take 64 KiB), sent
 * together. Both reads are waited for as Curator's own synchronous reads are: a lost connection fails them once the
 * client's retry policy gives up. A node this client may not read is listed with an empty id.
 */
final class Participants {
    private Participants() {}

    private static final String DOING = "listing the participants of";

    static List<Participant> read(CuratorFramework client, String path) {
        BackgroundRequests.refuseOnEventThread(DOING, path);
        try {
            return readOnce(client, path);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new CoordinationException("interrupted while listing participants of " + path, e);
        } catch (RuntimeException e) {
            throw e;
        } catch (Exception e) {
            throw BackgroundRequests.failure(DOING, path, e);
        }
    }

    /** The sequence nodes under {@code path} in queue order, from one children read; empty if there is no path. */
    static List<SequenceNode> queue(CuratorFramework client, String path) throws Exception {
        List<String> children;
        try {
            // Curator retries this itself. Not inside another retry loop: on a namespace facade's first use, a call
            // nested in RetryLoop.callWithRetry answers null.
            children = client.getChildren().forPath(path);
        } catch (KeeperException.NoNodeException e) {
            return List.of();
        }
        return children.stream()
                .map(SequenceNode::parse)
                .flatMap(Optional::stream)
                .sorted(Comparator.naturalOrder())
                .toList();
    }

    private static List<Participant> readOnce(CuratorFramework client, String path) throws Exception {
        List<SequenceNode> nodes = queue(client, path);
        if (nodes.isEmpty()) {
            return List.of();
        }
        List<String> paths =
                nodes.stream().map(n -> ZKPaths.makePath(path, n.name())).toList();
        List<OpResult> results = MultiRead.readRetrying(
                ClientContext.of(client), paths, Arguments.MAX_PARTICIPANT_ID_BYTES, DOING, path);
        List<Participant> participants = new ArrayList<>(nodes.size());
        for (int i = 0; i < nodes.size(); i++) {
            SequenceNode node = nodes.get(i);
            String id;
            if (results.get(i) instanceof OpResult.GetDataResult data) {
                id = data.getData() == null ? "" : new String(data.getData(), StandardCharsets.UTF_8);
            } else {
                KeeperException.Code code = KeeperException.Code.get(((OpResult.ErrorResult) results.get(i)).getErr());
                if (code == KeeperException.Code.NONODE) {
                    continue; // it left between the two reads: no longer a participant
                }
                if (code != KeeperException.Code.NOAUTH) {
                    throw BackgroundRequests.failure(DOING, ZKPaths.makePath(path, node.name()), code);
                }
                // A node this client may not read still holds its place: listed with an empty id, as the
                // election's observer reports such a leader, so that the first listed is the holder still.
                id = "";
            }
            participants.add(new Participant(id, node.name(), node.sequence()));
        }
        return List.copyOf(participants);
    }
}
