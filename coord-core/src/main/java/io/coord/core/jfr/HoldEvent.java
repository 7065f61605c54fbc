package io.coord.core.jfr;

import jdk.jfr.Category;
import jdk.jfr.Description;
import jdk.jfr.Label;
import jdk.jfr.Name;
import jdk.jfr.StackTrace;
import jdk.jfr.Timespan;

/** One hold of a lock, permits or a leadership term, committed when it ends. */
@Name("io.coord.Hold")
@Label("Hold")
@Category({"coord", "Leases"})
@Description("A granted lease of a coord primitive: how long it was held and how it ended")
@StackTrace(false)
public final class HoldEvent extends PrimitiveEvent {
    @Label("Fencing Token")
    @Description("The lease's fencing token: its node's creation zxid")
    long fencingToken;

    @Label("Hold Time")
    @Description("From the grant to the end")
    @Timespan(Timespan.NANOSECONDS)
    long holdTime;

    @Label("End")
    @Description("released (let go), lost (the session ended) or revoked (its node was deleted by someone else)")
    String end;

    HoldEvent() {}
}
