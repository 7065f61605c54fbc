package io.coord.bench;

import java.net.InetSocketAddress;
import java.util.List;
import java.util.OptionalLong;
import java.util.function.Function;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.apache.zookeeper.client.FourLetterWordMain;

/**
 * Reads the servers' own counters over four-letter words, so requests per operation are counted where they land
 * rather than as a client library reports them.
 *
 * <p>Requests come from {@code cons}: each client connection's {@code recved} count, summed over every session on
 * every server. {@code mntr}'s {@code zk_packets_received} would be the obvious source, but on ZooKeeper 3.9.3 it does
 * not move with client requests (it counted only the four-letter-word connections here), and {@code mntr}'s request
 * metrics are one JVM-wide registry that in-process servers share. A connection's count starts again when it
 * reconnects, so a window must not span a reconnect. Session pings are included: a session pings when it has sent
 * nothing for a third of its timeout less a second, so sessions that wait long between requests need long timeouts.
 */
public final class ServerCounters {
    private static final int TIMEOUT_MS = 5_000;
    // A session's line in cons carries its sid; the line of the cons connection itself has none.
    private static final Pattern SESSION_RECVED = Pattern.compile("recved=(\\d+),[^)]*sid=0x");
    private static final Pattern TOTAL_WATCHES = Pattern.compile("Total watches:(\\d+)");
    private static final Pattern SENT = Pattern.compile("(?m)^Sent: (\\d+)");

    private final List<InetSocketAddress> servers;

    public ServerCounters(List<InetSocketAddress> servers) {
        this.servers = List.copyOf(servers);
    }

    /**
     * The requests all servers have received from the sessions now connected, or empty if any server refused
     * {@code cons} (not on its {@code 4lw.commands.whitelist}) or could not be reached: a partial sum would be a
     * wrong figure.
     */
    public OptionalLong requestsReceived() {
        return sum("cons", ServerCounters::parseRequests);
    }

    /**
     * The packets all servers have sent since they started, from {@code srvr}: replies and watch notifications alike,
     * to every connection. Empty as for {@link #requestsReceived()}.
     */
    public OptionalLong packetsSent() {
        return sum("srvr", ServerCounters::parseSent);
    }

    /**
     * The watches all servers hold on the nodes under {@code path} (not on {@code path} itself), from {@code wchp};
     * empty as for {@link #requestsReceived()}.
     */
    public OptionalLong watchesUnder(String path) {
        return sum("wchp", reply -> parseWatchesUnder(reply, path));
    }

    /** The watches all servers hold, from {@code wchs}; empty as for {@link #requestsReceived()}. */
    public OptionalLong watches() {
        return sum("wchs", ServerCounters::parseWatches);
    }

    private OptionalLong sum(String command, Function<String, OptionalLong> parse) {
        long total = 0;
        for (InetSocketAddress server : servers) {
            OptionalLong one;
            try {
                one = parse.apply(FourLetterWordMain.send4LetterWord(
                        server.getHostString(), server.getPort(), command, false, TIMEOUT_MS));
            } catch (Exception e) {
                return OptionalLong.empty();
            }
            if (one.isEmpty()) {
                return OptionalLong.empty();
            }
            total += one.getAsLong();
        }
        return OptionalLong.of(total);
    }

    /** The sum of {@code recved} over the session lines of one {@code cons} reply; empty for a refusal. */
    static OptionalLong parseRequests(String cons) {
        if (cons.contains("not in the whitelist") || !cons.contains("recved=")) {
            return OptionalLong.empty();
        }
        long total = 0;
        Matcher m = SESSION_RECVED.matcher(cons);
        while (m.find()) {
            total += Long.parseLong(m.group(1));
        }
        return OptionalLong.of(total);
    }

    /** The session lines under the paths below {@code path} in one {@code wchp} reply; empty for a refusal. */
    static OptionalLong parseWatchesUnder(String wchp, String path) {
        if (wchp.contains("not in the whitelist") || wchp.contains("not executed")) {
            return OptionalLong.empty();
        }
        long total = 0;
        boolean under = false;
        for (String line : wchp.split("\n")) {
            if (line.startsWith("/")) {
                under = line.trim().startsWith(path + "/");
            } else if (under && line.trim().startsWith("0x")) {
                total++;
            }
        }
        return OptionalLong.of(total);
    }

    /** The {@code Sent} count of one {@code srvr} reply; empty for a refusal or anything else. */
    static OptionalLong parseSent(String srvr) {
        Matcher m = SENT.matcher(srvr);
        return m.find() ? OptionalLong.of(Long.parseLong(m.group(1))) : OptionalLong.empty();
    }

    /** The {@code Total watches} of one {@code wchs} reply; empty for a refusal or anything else. */
    static OptionalLong parseWatches(String wchs) {
        Matcher m = TOTAL_WATCHES.matcher(wchs);
        return m.find() ? OptionalLong.of(Long.parseLong(m.group(1))) : OptionalLong.empty();
    }
}
