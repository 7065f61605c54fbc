package io.coord.testkit;

import java.util.ArrayList;
import java.util.List;
import org.apache.curator.framework.api.ACLProvider;
import org.apache.zookeeper.data.ACL;

/** ACL providers for clients under test. */
public final class Acls {
    private Acls() {}

    /** Gives {@code acl} to every node the client creates. */
    public static ACLProvider everywhere(List<ACL> acl) {
        // A list that may be asked whether it holds null, as ZooKeeper's synchronous create does.
        List<ACL> answer = new ArrayList<>(acl);
        return new ACLProvider() {
            @Override
            public List<ACL> getDefaultAcl() {
                return answer;
            }

            @Override
            public List<ACL> getAclForPath(String path) {
                return answer;
            }
        };
    }
}
