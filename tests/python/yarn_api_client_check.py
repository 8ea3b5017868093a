"""Calls a sparkyard ResourceManager's REST API with yarn-api-client's ResourceManager, as a
YARN user's script would (the library unchanged), and prints what it read as one JSON object
for tests/rest_api.rs to check.

Usage: yarn_api_client_check.py <http://host:port> <finished app id> <running app id> <node id> <user>
"""

import json
import sys

from yarn_api_client.base import APIError
from yarn_api_client.resource_manager import ResourceManager


def main():
    url, finished, running, node, user = sys.argv[1:6]
    rm = ResourceManager(service_endpoints=[url], timeout=30)
    out = {"endpoint": rm.get_active_endpoint()}
    out["info"] = rm.cluster_information().data
    out["metrics"] = rm.cluster_metrics().data
    out["scheduler"] = rm.cluster_scheduler().data
    out["apps"] = rm.cluster_applications().data
    out["apps_running"] = rm.cluster_applications(states=["RUNNING"]).data
    out["apps_finished_or_killed"] = rm.cluster_applications(states=["FINISHED", "KILLED"]).data
    out["apps_user"] = rm.cluster_applications(user=user).data
    out["apps_other_user"] = rm.cluster_applications(user=user + "-nobody").data
    out["apps_limit"] = rm.cluster_applications(limit=1).data
    out["apps_spark"] = rm.cluster_applications(application_types=["SPARK"]).data
    out["apps_mapreduce"] = rm.cluster_applications(application_types=["MAPREDUCE"]).data
    out["app"] = rm.cluster_application(finished).data
    out["attempts"] = rm.cluster_application_attempts(finished).data
    out["state_before"] = rm.cluster_application_state(running).data
    out["nodes"] = rm.cluster_nodes().data
    out["nodes_running"] = rm.cluster_nodes(states=["RUNNING"]).data
    out["node"] = rm.cluster_node(node).data
    out["kill"] = rm.cluster_application_kill(running).data
    out["state_after"] = rm.cluster_application_state(running).data
    out["kill_again"] = rm.cluster_application_kill(running).data
    out["metrics_after"] = rm.cluster_metrics().data
    try:
        rm.cluster_application(finished[:-4] + "9999")
        out["unknown_app"] = "no error"
    except APIError as e:
        out["unknown_app"] = str(e)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
