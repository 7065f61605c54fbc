package io.coord.core.jfr;

import jdk.jfr.Category;
import jdk.jfr.Description;
import jdk.jfr.Label;
import jdk.jfr.Name;
import jdk.jfr.StackTrace;

/** A held lease changed state: SUSPECT when the connection drops, HELD again, or LOST. */
@Name("io.coord.LeaseState")
@Label("Lease State")
@Category({"coord", "Leases"})
@Description("A held lease turned SUSPECT, HELD again, or LOST")
@StackTrace(false)
public final class LeaseStateEvent extends PrimitiveEvent {
    @Label("Fencing Token")
    @Description("The lease's fencing token: its node's creation zxid")
    long fencingToken;

    @Label("From")
    String from;

    @Label("To")
    String to;

    LeaseStateEvent() {}
}
