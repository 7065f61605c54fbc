package io.coord.testkit;

import java.util.ArrayList;
import java.util.List;
import java.util.function.Predicate;
import org.apache.curator.framework.api.ACLProvider;
import org.apache.zookeeper.data.ACL;

/** ACL providers for clients under test. */
public final class Acls {
    private Acls() {}

    /** Gives {@code acl} to every node the client creates. */
    public static ACLProvider everywhere(List<ACL> acl) {
        return byPath(path -> true, acl, acl);
    }

    /** Gives {@code matching} to the nodes whose path {@code test} accepts, and {@code others} to every other node. */
    public static ACLProvider byPath(Predicate<String> test, List<ACL> matching, List<ACL> others) {
        // Lists that may be asked whether they hold null, as ZooKeeper's synchronous create does.
        List<ACL> forMatching = new ArrayList<>(matching);
        List<ACL> forOthers = new ArrayList<>(others);
        return new ACLProvider() {
            @Override
            public List<ACL> getDefaultAcl() {
                return forOthers;
            }

            @Override
            public List<ACL> getAclForPath(String path) {
                return test.test(path) ? forMatching : forOthers;
            }
        };
    }
}
