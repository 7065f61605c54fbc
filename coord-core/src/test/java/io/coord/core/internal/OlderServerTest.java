package io.coord.core.internal;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.coord.testkit.ZooKeeperFixture;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.state.ConnectionState;
import org.apache.zookeeper.KeeperException.Code;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * What the answers to requests of ZooKeeper 3.6 (addWatch, a read-only multi) tell a client of its server. A server
 * before 3.6 answers one UNIMPLEMENTED, but behind a write the client takes that answer out of turn for a broken
 * connection: connections that break under one count too.
 */
@Timeout(60)
class OlderServerTest {
    @RegisterExtension
    static final ZooKeeperFixture zk = new ZooKeeperFixture();

    @Test
    void threeConnectionsBrokenUnderA36RequestMarkAnOlderServerUntilTheServerCarriesOneOut() throws Exception {
        ClientContext context = connectedContext();
        long first = context.server().newerRequestSent();

        // One count per connection: however many of its requests it lost.
        assertFalse(context.server().answeredAsOlderServer(Code.CONNECTIONLOSS, first));
        assertFalse(context.server().answeredAsOlderServer(Code.CONNECTIONLOSS, first));
        // No news of the server: a request sent while not connected, a session's end, the client's own failures.
        assertFalse(context.server().answeredAsOlderServer(Code.CONNECTIONLOSS, notConnected(context)));
        for (Code noNews : new Code[] {Code.SESSIONEXPIRED, Code.OPERATIONTIMEOUT, Code.SYSTEMERROR, null}) {
            assertFalse(context.server().answeredAsOlderServer(noNews, first + 5));
        }
        assertFalse(context.server().answeredAsOlderServer(Code.CONNECTIONLOSS, first + 1));
        assertTrue(context.usesViews());

        assertTrue(
                context.server().answeredAsOlderServer(Code.CONNECTIONLOSS, first + 2),
                "the third connection marks it");
        assertTrue(context.server().hasOlderServer());
        assertFalse(context.server().saidItIsOlder(), "only a guess");
        assertFalse(context.usesViews());
        assertTrue(context.server().answeredAsOlderServer(Code.CONNECTIONLOSS, first + 3));

        // The server carries one out after all (a queue's watch, say): the guess is taken back, for good.
        assertFalse(context.server().answeredAsOlderServer(Code.OK, first + 4));
        assertFalse(context.server().hasOlderServer());
        assertTrue(context.usesViews());
        for (long connection = first + 10; connection < first + 20; connection++) {
            assertFalse(context.server().answeredAsOlderServer(Code.CONNECTIONLOSS, connection));
        }
    }

    @Test
    void aServerThatAnswersUnimplementedSaysItIsOlder() throws Exception {
        ClientContext context = connectedContext();
        assertFalse(
                context.server()
                        .answeredAsOlderServer(
                                Code.THROTTLEDOP, context.server().newerRequestSent()),
                "a 3.6 answer");

        assertTrue(context.server()
                .answeredAsOlderServer(Code.UNIMPLEMENTED, context.server().newerRequestSent()));
        assertTrue(context.server().saidItIsOlder());
        assertFalse(context.usesViews());
        // Another server of the ensemble may be newer, but this client asks for no more views.
        assertTrue(
                context.server().answeredAsOlderServer(Code.OK, context.server().newerRequestSent()));
        assertTrue(context.server().saidItIsOlder());
    }

    private static ClientContext connectedContext() throws InterruptedException {
        CuratorFramework client = zk.newClient();
        ClientContext context = ClientContext.of(client);
        await().until(() -> context.server().newerRequestSent() >= 0); // the news of the first connection is in
        return context;
    }

    /** What the context gives a request sent during an outage, which it is then told is over. */
    private static long notConnected(ClientContext context) {
        context.stateChanged(context.client(), ConnectionState.SUSPENDED);
        long sent = context.server().newerRequestSent();
        context.stateChanged(context.client(), ConnectionState.RECONNECTED);
        return sent;
    }
}
