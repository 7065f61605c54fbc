package io.coord.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.OptionalLong;
import org.junit.jupiter.api.Test;

class ServerCountersTest {

    @Test
    void requestsAreSummedOverSessionsOnly() {
        String cons = """
                 /127.0.0.1:43832[1](queued=0,recved=23,sent=23,sid=0x20000200dbe0000,lop=GETD,est=1,to=5000)
                 /127.0.0.1:43840[1](queued=0,recved=7,sent=7,sid=0x20000200dbe0001,lop=PING,est=1,to=5000)
                 /127.0.0.1:35562[0](queued=0,recved=1,sent=0)
                """;
        // The last line is the cons connection itself: no session, not a client's request.
        assertEquals(OptionalLong.of(30), ServerCounters.parseRequests(cons));
    }

    @Test
    void aServerWithoutSessionsCountsZero() {
        assertEquals(
                OptionalLong.of(0), ServerCounters.parseRequests(" /127.0.0.1:35562[0](queued=0,recved=1,sent=0)\n"));
    }

    @Test
    void aRefusedCommandIsNotAZero() {
        assertEquals(
                OptionalLong.empty(),
                ServerCounters.parseRequests("cons is not executed because it is not in the whitelist.\n"));
        assertEquals(
                OptionalLong.empty(),
                ServerCounters.parseWatches("wchs is not executed because it is not in the whitelist.\n"));
    }

    @Test
    void watchesComeFromTheTotalLine() {
        assertEquals(
                OptionalLong.of(11),
                ServerCounters.parseWatches("1 connections watching 11 paths\nTotal watches:11\n"));
    }

    @Test
    void packetsSentComeFromTheSentLineOfSrvr() {
        String srvr = """
                Zookeeper version: 3.9.3, built on 2024-10-17 23:21 UTC
                Latency min/avg/max: 0/0.1/9
                Received: 1843
                Sent: 1907
                Connections: 3
                Outstanding: 0
                Zxid: 0x100000052
                Mode: follower
                Node count: 9
                """;
        assertEquals(OptionalLong.of(1907), ServerCounters.parseSent(srvr));
        assertEquals(
                OptionalLong.empty(),
                ServerCounters.parseSent("srvr is not executed because it is not in the whitelist.\n"));
    }

    @Test
    void watchesUnderAPathCountEverySessionOnTheNodesBelowIt() {
        String wchp = "/run/s3-curator-10/_c_1-lock-0000000001\n\t0x1000001\n"
                + "/run/s3-curator-10/_c_2-lock-0000000002\n\t0x1000001\n\t0x1000002\n"
                + "/run/s3-curator-10\n\t0x1000003\n"
                + "/run/s3-curator-100/_c_3-lock-0000000003\n\t0x1000001\n";
        assertEquals(OptionalLong.of(3), ServerCounters.parseWatchesUnder(wchp, "/run/s3-curator-10"));
        assertEquals(
                OptionalLong.empty(),
                ServerCounters.parseWatchesUnder("wchp is not executed because it is not in the whitelist.\n", "/run"));
    }
}
