//! Who may do what, as Hadoop and YARN decide it: the caller's name (simple authentication:
//! `HADOOP_USER_NAME`, else the OS user of the process), its groups from the OS, Hadoop's
//! AccessControlList, ProxyUsers' impersonation rules (`hadoop.proxyuser.<real>.*`), and
//! YARN's ApplicationACLsManager and AdminACLsManager (`yarn.acl.enable`, `yarn.admin.acl`).
//!
//! Layer: yarn (above rpc; knows nothing of Spark: an application's ACL strings arrive in
//! its submission context, computed by the Spark side).
//!
//! The rules, as Hadoop's:
//! - An ACL is `users groups`: two comma lists separated by the first space; `*` (either
//!   part, trimmed) allows everyone; a blank one allows nobody. A user is allowed when named,
//!   or when one of its groups is.
//! - A user's groups are the OS's (`id -Gn`, Hadoop's default ShellBasedUnixGroupsMapping),
//!   cached for 300 s (30 s for a user the OS does not know, who has none), as
//!   `hadoop.security.groups.cache.secs` and its negative cache do.
//! - With `yarn.acl.enable` off everyone may do everything. With it on, an admin
//!   (`yarn.admin.acl`, plus the node's own user, as AdminACLsManager adds it) may do
//!   everything; an application's owner may view and modify it; others need its VIEW_APP or
//!   MODIFY_APP ACL (an application without one allows nobody else, YARN's default `" "`).
//! - A real user may act as a proxy user when `hadoop.proxyuser.<real>.users` names the
//!   proxy user (or `.groups` one of its groups, or either is `*`; each key also as
//!   `spark.hadoop.hadoop.proxyuser.*`, as Spark passes Hadoop settings) and
//!   `hadoop.proxyuser.<real>.hosts` includes the address the call came from (`*`, a host
//!   name, an address, or an IPv4 `a.b.c.d/n` range); otherwise Hadoop's "User: alice is not
//!   allowed to impersonate bob".

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt;
use std::net::IpAddr;
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::conf::{self, SparkConf};

/// The environment variable naming the caller under simple authentication.
pub const HADOOP_USER_NAME: &str = "HADOOP_USER_NAME";
/// The prefix of ProxyUsers' keys: `hadoop.proxyuser.<real user>.{users,groups,hosts}`.
pub const PROXYUSER_PREFIX: &str = "hadoop.proxyuser.";

/// Hadoop settings passed through Spark's configuration (`spark.hadoop.<key>`).
const SPARK_HADOOP_PREFIX: &str = "spark.hadoop.";

/// How long a user's groups are kept (`hadoop.security.groups.cache.secs`).
const GROUPS_CACHE: Duration = Duration::from_secs(300);
/// How long "no groups" is kept (`hadoop.security.groups.negative-cache.secs`).
const NO_GROUPS_CACHE: Duration = Duration::from_secs(30);

/// YARN's ApplicationAccessType.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum ApplicationAccessType {
    /// Read the application: its report and its containers' output.
    ViewApp,
    /// Change the application: kill it.
    ModifyApp,
}

impl fmt::Display for ApplicationAccessType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ApplicationAccessType::ViewApp => "VIEW_APP",
            ApplicationAccessType::ModifyApp => "MODIFY_APP",
        })
    }
}

/// Who makes a call: the user it acts as and, when that is a proxy user, the real user
/// behind it (UserGroupInformation's user and real user).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Caller {
    pub user: String,
    pub real_user: Option<String>,
}

/// The user this process acts as when it is not its login user (spark-submit's
/// `--proxy-user`: SparkSubmit runs everything inside the proxy user's `doAs`).
static PROXY_USER: std::sync::RwLock<Option<String>> = std::sync::RwLock::new(None);

/// From now on this process acts as `proxy` on behalf of its login user (UserGroupInformation
/// `createProxyUser(proxy, login).doAs`): every call's caller is [`Caller::current`].
pub fn act_as_proxy_user(proxy: &str) {
    *PROXY_USER.write().unwrap_or_else(|p| p.into_inner()) = Some(proxy.to_string());
}

impl Caller {
    /// Who this process acts as now: the proxy user (with the login user behind it) once
    /// [`act_as_proxy_user`] was called, else the login user.
    pub fn current() -> Caller {
        match PROXY_USER.read().unwrap_or_else(|p| p.into_inner()).as_deref() {
            Some(proxy) => Caller::proxy(proxy),
            None => Caller::login(),
        }
    }

    /// The user of this process ([`login_user`]).
    pub fn login() -> Caller {
        Caller {
            user: login_user(),
            real_user: None,
        }
    }

    /// This process's user acting as `proxy` (spark-submit's `--proxy-user`).
    pub fn proxy(proxy: &str) -> Caller {
        Caller {
            user: proxy.to_string(),
            real_user: Some(login_user()),
        }
    }
}

impl fmt::Display for Caller {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.real_user {
            Some(real) => write!(f, "{} (via {real})", self.user),
            None => f.write_str(&self.user),
        }
    }
}

/// The user this process acts as under simple authentication: `HADOOP_USER_NAME` when set
/// and not empty, else the OS user, else `$USER`, else `sparkyard`.
pub fn login_user() -> String {
    if let Ok(name) = std::env::var(HADOOP_USER_NAME) {
        if !name.trim().is_empty() {
            return name.trim().to_string();
        }
    }
    static OS_USER: OnceLock<String> = OnceLock::new();
    OS_USER
        .get_or_init(|| {
            let uid = rustix::process::geteuid().as_raw();
            std::fs::read_to_string(PASSWD_FILE)
                .ok()
                .and_then(|passwd| passwd_user(&passwd, uid))
                .or_else(id_un)
                .or_else(|| std::env::var("USER").ok().filter(|u| !u.is_empty()))
                .unwrap_or_else(|| "sparkyard".to_string())
        })
        .clone()
}

/// The local user database [`login_user`] reads first.
const PASSWD_FILE: &str = "/etc/passwd";

/// The name of user `uid` in a passwd file's text (`name:password:uid:gid:...`, the first
/// entry with that uid, as `getpwuid` finds it in the files database).
fn passwd_user(passwd: &str, uid: u32) -> Option<String> {
    passwd.lines().find_map(|line| {
        let mut fields = line.split(':');
        let name = fields.next()?.trim();
        let entry_uid = fields.nth(1)?.trim().parse::<u32>().ok()?;
        (entry_uid == uid && !name.is_empty() && !name.starts_with(['#', '+', '-'])).then(|| name.to_string())
    })
}

/// `id -un`: the user name the OS's name service gives this process (a user that is not in
/// the passwd file: a directory service's). A process start, so only when the passwd file
/// does not name the user: forking this process cost the submit command about 2 ms of its
/// start, on the path to the first call to the ResourceManager.
fn id_un() -> Option<String> {
    std::process::Command::new("id")
        .arg("-un")
        .stderr(std::process::Stdio::null())
        .output()
        .ok()
        .filter(|o| o.status.success())
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
}

/// Each user's groups, with when they were looked up.
type GroupsCache = HashMap<String, (Instant, Vec<String>)>;

/// The OS groups of `user` (none for a user the OS does not know), cached as Hadoop's Groups
/// caches them.
pub fn groups_of(user: &str) -> Vec<String> {
    static CACHE: OnceLock<Mutex<GroupsCache>> = OnceLock::new();
    let cache = CACHE.get_or_init(Default::default);
    let now = Instant::now();
    if let Some((at, groups)) = cache.lock().unwrap_or_else(|p| p.into_inner()).get(user) {
        let keep = if groups.is_empty() {
            NO_GROUPS_CACHE
        } else {
            GROUPS_CACHE
        };
        if now.duration_since(*at) < keep {
            return groups.clone();
        }
    }
    let groups = os_groups(user);
    tracing::debug!(user, groups = ?groups, "groups of user {user}: {groups:?}");
    cache
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .insert(user.to_string(), (now, groups.clone()));
    groups
}

/// `id -Gn -- <user>`: the user's primary group first, then the others; nothing for a name
/// the OS does not know (or one that cannot be a user name).
fn os_groups(user: &str) -> Vec<String> {
    if user.is_empty() || user.starts_with('-') || user.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Vec::new();
    }
    std::process::Command::new("id")
        .args(["-Gn", "--", user])
        .stderr(std::process::Stdio::null())
        .output()
        .ok()
        .filter(|o| o.status.success())
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .map(|s| s.split_whitespace().map(str::to_string).collect())
        .unwrap_or_default()
}

/// Hadoop's AccessControlList: `users groups`, `*` for everyone, blank for nobody.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AccessControlList {
    all_allowed: bool,
    users: BTreeSet<String>,
    groups: BTreeSet<String>,
}

fn comma_set(list: &str) -> BTreeSet<String> {
    list.split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect()
}

impl AccessControlList {
    /// Parses an ACL string: the users before the first space, the groups after it.
    pub fn parse(acl: &str) -> AccessControlList {
        let (users, groups) = match acl.split_once(' ') {
            Some((u, g)) => (u, Some(g)),
            None => (acl, None),
        };
        AccessControlList::of(users, groups.unwrap_or(""))
    }

    /// An ACL of the comma lists `users` and `groups` (either `*` allows everyone).
    pub fn of(users: &str, groups: &str) -> AccessControlList {
        if users.trim() == "*" || groups.trim() == "*" {
            return AccessControlList {
                all_allowed: true,
                ..AccessControlList::default()
            };
        }
        AccessControlList {
            all_allowed: false,
            users: comma_set(users),
            groups: comma_set(groups),
        }
    }

    /// Whether everyone is allowed.
    pub fn is_all_allowed(&self) -> bool {
        self.all_allowed
    }

    /// Adds a user (as AdminACLsManager adds the node's own user).
    pub fn add_user(&mut self, user: &str) {
        if !self.all_allowed && !user.trim().is_empty() {
            self.users.insert(user.trim().to_string());
        }
    }

    /// Whether `user`, whose groups `groups` yields (asked only when needed), is allowed.
    pub fn allows_with(&self, user: &str, groups: impl FnOnce() -> Vec<String>) -> bool {
        if self.all_allowed || self.users.contains(user) {
            return true;
        }
        !self.groups.is_empty() && groups().iter().any(|g| self.groups.contains(g))
    }

    /// Whether `user` (with its OS groups) is allowed.
    pub fn allows(&self, user: &str) -> bool {
        self.allows_with(user, || groups_of(user))
    }
}

impl fmt::Display for AccessControlList {
    /// The ACL string that parses back to this ACL.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.all_allowed {
            return f.write_str("*");
        }
        let join = |s: &BTreeSet<String>| s.iter().cloned().collect::<Vec<_>>().join(",");
        write!(f, "{} {}", join(&self.users), join(&self.groups))
    }
}

/// Hadoop's MachineList: `*`, or host names, addresses and IPv4 `a.b.c.d/n` ranges.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MachineList {
    all: bool,
    entries: Vec<String>,
}

impl MachineList {
    pub fn parse(list: &str) -> MachineList {
        let entries: Vec<String> = comma_set(list).into_iter().collect();
        MachineList {
            all: entries.iter().any(|e| e == "*"),
            entries,
        }
    }

    /// Whether `addr` is in the list (names are resolved when asked).
    pub fn includes(&self, addr: IpAddr) -> bool {
        if self.all {
            return true;
        }
        self.entries.iter().any(|e| {
            if let Ok(ip) = e.parse::<IpAddr>() {
                return ip == addr;
            }
            if let Some((net, bits)) = e.split_once('/') {
                return match (net.parse::<std::net::Ipv4Addr>(), bits.parse::<u32>(), addr) {
                    (Ok(net), Ok(bits), IpAddr::V4(a)) if bits <= 32 => {
                        let mask = if bits == 0 { 0 } else { u32::MAX << (32 - bits) };
                        u32::from(net) & mask == u32::from(a) & mask
                    }
                    _ => false,
                };
            }
            use std::net::ToSocketAddrs;
            (e.as_str(), 0)
                .to_socket_addrs()
                .map(|mut addrs| addrs.any(|s| s.ip() == addr))
                .unwrap_or(false)
        })
    }
}

/// Hadoop's ProxyUsers (DefaultImpersonationProvider) from `hadoop.proxyuser.*`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ProxyUsers {
    /// Per real user: whom it may impersonate, and from where (no `.hosts`: nowhere).
    rules: BTreeMap<String, (AccessControlList, Option<MachineList>)>,
}

impl ProxyUsers {
    /// The rules of `conf`, whose keys are `hadoop.proxyuser.*` or, as Spark passes Hadoop
    /// settings through its configuration, `spark.hadoop.hadoop.proxyuser.*` (which wins).
    pub fn from_conf(conf: &SparkConf) -> ProxyUsers {
        let mut reals = BTreeSet::new();
        for (key, _) in conf.iter() {
            let key = key.strip_prefix(SPARK_HADOOP_PREFIX).unwrap_or(key);
            if let Some(rest) = key.strip_prefix(PROXYUSER_PREFIX) {
                for suffix in [".users", ".groups", ".hosts"] {
                    if let Some(real) = rest.strip_suffix(suffix) {
                        if !real.is_empty() {
                            reals.insert(real.to_string());
                        }
                    }
                }
            }
        }
        let rules = reals
            .into_iter()
            .map(|real| {
                let get = |s: &str| {
                    let key = format!("{PROXYUSER_PREFIX}{real}.{s}");
                    conf.get_str(&format!("{SPARK_HADOOP_PREFIX}{key}"))
                        .or_else(|| conf.get_str(&key))
                        .map(str::to_string)
                };
                let acl = AccessControlList::of(
                    &get("users").unwrap_or_default(),
                    &get("groups").unwrap_or_default(),
                );
                let hosts = get("hosts").map(|h| MachineList::parse(&h));
                (real, (acl, hosts))
            })
            .collect();
        ProxyUsers { rules }
    }

    /// Whether `caller`'s real user (if any) may act as its user from `remote` (the
    /// loopback address when the call did not come over the network); the refusal is
    /// Hadoop's AuthorizationException text.
    pub fn authorize(&self, caller: &Caller, remote: Option<IpAddr>) -> Result<(), String> {
        let Some(real) = &caller.real_user else {
            return Ok(());
        };
        let user = &caller.user;
        match self.rules.get(real) {
            Some((acl, _)) if acl.allows(user) => {}
            _ => return Err(format!("User: {real} is not allowed to impersonate {user}")),
        }
        let remote = remote.unwrap_or(IpAddr::V4(std::net::Ipv4Addr::LOCALHOST));
        match self.rules.get(real).and_then(|(_, hosts)| hosts.as_ref()) {
            Some(hosts) if hosts.includes(remote) => Ok(()),
            _ => Err(format!(
                "Unauthorized connection for super-user: {real} from IP {remote}"
            )),
        }
    }
}

/// YARN's ApplicationACLsManager and AdminACLsManager, with ProxyUsers: the node's
/// decisions on who may do what.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AclsManager {
    enabled: bool,
    admin: AccessControlList,
    proxy_users: ProxyUsers,
}

impl Default for AclsManager {
    /// ACLs off: everyone may do everything (proxy users still need their rules).
    fn default() -> Self {
        AclsManager {
            enabled: false,
            admin: AccessControlList::of("*", ""),
            proxy_users: ProxyUsers::default(),
        }
    }
}

impl AclsManager {
    /// From the node's configuration; `node_user` (the node's own user) is always an admin.
    pub fn from_conf(conf: &SparkConf, node_user: &str) -> Result<AclsManager, String> {
        let enabled = conf.get(&conf::YARN_ACL_ENABLE).map_err(|e| e.to_string())?;
        let mut admin =
            AccessControlList::parse(&conf.get(&conf::YARN_ADMIN_ACL).map_err(|e| e.to_string())?);
        admin.add_user(node_user);
        Ok(AclsManager {
            enabled,
            admin,
            proxy_users: ProxyUsers::from_conf(conf),
        })
    }

    /// Whether `yarn.acl.enable` is on.
    pub fn enabled(&self) -> bool {
        self.enabled
    }

    /// The impersonation check of a call's caller (see [`ProxyUsers::authorize`]).
    pub fn authorize_proxy(&self, caller: &Caller, remote: Option<IpAddr>) -> Result<(), String> {
        self.proxy_users.authorize(caller, remote)
    }

    /// AdminACLsManager.isAdmin: everyone with ACLs off, else the admin ACL's users.
    pub fn is_admin(&self, user: &str) -> bool {
        !self.enabled || self.admin.allows(user)
    }

    /// ApplicationACLsManager.checkAccess: whether `user` may do `access` on an application
    /// of `owner` with the ACL strings `acls`.
    pub fn check_access(
        &self,
        user: &str,
        access: ApplicationAccessType,
        owner: &str,
        acls: &BTreeMap<ApplicationAccessType, String>,
    ) -> bool {
        if !self.enabled || user == owner || self.admin.allows(user) {
            return true;
        }
        acls.get(&access)
            .map(|acl| AccessControlList::parse(acl).allows(user))
            .unwrap_or(false)
    }

    /// The refusal of an admin call, in AdminService's words.
    pub fn admin_refusal(user: &str, method: &str) -> String {
        format!("User {user} doesn't have permission to call '{method}'")
    }

    /// The refusal of an application operation, in ClientRMService's words.
    pub fn app_refusal(user: &str, access: ApplicationAccessType, target: &str) -> String {
        format!("User {user} cannot perform operation {access} on {target}")
    }
}

/// RMAuditLogger.logFailure: one WARN record of a refused call.
pub fn audit_failure(user: &str, operation: &str, target: &str, description: &str, app_id: Option<&str>) {
    tracing::warn!(
        event = "access_denied",
        user,
        operation,
        target,
        result = "FAILURE",
        description,
        app_id = app_id.unwrap_or(""),
        "USER={user}\tOPERATION={operation}\tTARGET={target}\tRESULT=FAILURE\tDESCRIPTION={description}{}",
        app_id.map(|a| format!("\tAPPID={a}")).unwrap_or_default()
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    fn groups<'a>(g: &'a [&'a str]) -> impl FnOnce() -> Vec<String> + 'a {
        move || g.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn acl_strings_parse_as_hadoop_parses_them() {
        let acl = AccessControlList::parse("alice,bob staff,ops");
        assert!(acl.allows_with("alice", groups(&[])));
        assert!(acl.allows_with("bob", groups(&[])));
        assert!(!acl.allows_with("carol", groups(&["users"])));
        assert!(acl.allows_with("carol", groups(&["users", "ops"])));
        assert_eq!(acl.to_string(), "alice,bob ops,staff");

        // Everyone: `*` alone or as either part.
        assert!(AccessControlList::parse("*").allows_with("x", groups(&[])));
        assert!(AccessControlList::parse(" * ").allows_with("x", groups(&[])));
        assert!(AccessControlList::parse("alice *").allows_with("x", groups(&[])));
        // Nobody: blank.
        for blank in ["", " ", "  "] {
            assert!(
                !AccessControlList::parse(blank).allows_with("x", groups(&["x"])),
                "{blank:?}"
            );
        }
        // Groups only: a leading space.
        let g = AccessControlList::parse(" wheel");
        assert!(!g.allows_with("wheel", groups(&[])));
        assert!(g.allows_with("x", groups(&["wheel"])));
        // Spaces around names and empty items are dropped; the first space still splits.
        let t = AccessControlList::parse("alice,, carol ,");
        assert!(t.allows_with("alice", groups(&[])));
        assert!(!t.allows_with("carol", groups(&[])));
        assert!(t.allows_with("x", groups(&["carol"])));
        assert!(!t.allows_with("", groups(&[])));
    }

    #[test]
    fn groups_are_asked_only_when_the_name_is_not_enough() {
        let acl = AccessControlList::parse("alice");
        assert!(!acl.allows_with("bob", || panic!("no groups in the ACL: not asked")));
        assert!(acl.allows_with("alice", || panic!("named: not asked")));
    }

    #[test]
    fn a_user_the_os_does_not_know_has_no_groups() {
        assert!(groups_of("no-such-user-sparkyard-acl").is_empty());
        assert!(groups_of("-n").is_empty());
        // The process's own user has at least its primary group.
        let me = std::process::Command::new("id").arg("-un").output().unwrap();
        let me = String::from_utf8(me.stdout).unwrap();
        assert!(!groups_of(me.trim()).is_empty());
    }

    #[test]
    fn the_login_user_is_the_one_id_names_without_running_id() {
        // Unless HADOOP_USER_NAME is set, the process's user as `id -un` names it.
        if std::env::var(HADOOP_USER_NAME).is_ok_and(|v| !v.trim().is_empty()) {
            return;
        }
        let id = std::process::Command::new("id").arg("-un").output().unwrap();
        assert_eq!(login_user(), String::from_utf8(id.stdout).unwrap().trim());
        // ... found in the passwd file, so `id` need not run (it is in this machine's).
        let passwd = std::fs::read_to_string(PASSWD_FILE).unwrap();
        let uid = rustix::process::geteuid().as_raw();
        assert_eq!(passwd_user(&passwd, uid).as_deref(), Some(login_user().as_str()));
    }

    #[test]
    fn a_passwd_file_names_a_uid_by_its_first_entry() {
        let passwd = "# comment\nroot:x:0:0:root:/root:/bin/bash\n\nbroken\nalice:x:1000:1000::/home/alice:/bin/sh\nalias:x:1000:1000::/:/bin/sh\n+nis:x:1001:1001::/:\nbob:*:1002\n";
        assert_eq!(passwd_user(passwd, 0).as_deref(), Some("root"));
        assert_eq!(passwd_user(passwd, 1000).as_deref(), Some("alice"));
        assert_eq!(passwd_user(passwd, 1002).as_deref(), Some("bob"));
        // Not in the file (or only as a name service's +entry): `id` is asked instead.
        assert_eq!(passwd_user(passwd, 1001), None);
        assert_eq!(passwd_user(passwd, 4242), None);
        assert_eq!(passwd_user("", 0), None);
    }

    fn manager(enabled: bool, admin: &str) -> AclsManager {
        let mut conf = SparkConf::new();
        conf.set("yarn.acl.enable", enabled.to_string());
        conf.set("yarn.admin.acl", admin);
        AclsManager::from_conf(&conf, "yarn").unwrap()
    }

    #[test]
    fn application_access_is_decided_as_application_acls_manager_does() {
        use ApplicationAccessType::*;
        let acls = BTreeMap::from([
            (ViewApp, "alice,carol ".to_string()),
            (ModifyApp, "alice,dave ".to_string()),
        ]);
        let off = manager(false, " ");
        assert!(off.check_access("mallory", ModifyApp, "alice", &BTreeMap::new()));
        assert!(off.is_admin("mallory"));

        let on = manager(true, "root ");
        assert!(
            on.check_access("alice", ModifyApp, "alice", &BTreeMap::new()),
            "the owner"
        );
        assert!(
            on.check_access("root", ModifyApp, "alice", &BTreeMap::new()),
            "an admin"
        );
        assert!(
            on.check_access("yarn", ModifyApp, "alice", &BTreeMap::new()),
            "the node's user"
        );
        assert!(on.check_access("carol", ViewApp, "bob", &acls));
        assert!(!on.check_access("carol", ModifyApp, "bob", &acls));
        assert!(on.check_access("dave", ModifyApp, "bob", &acls));
        assert!(!on.check_access("mallory", ViewApp, "bob", &acls));
        assert!(
            !on.check_access("carol", ViewApp, "bob", &BTreeMap::new()),
            "no ACL: nobody else"
        );
        assert!(on.is_admin("root") && on.is_admin("yarn") && !on.is_admin("alice"));
        // The default admin ACL is everyone.
        let mut conf = SparkConf::new();
        conf.set("yarn.acl.enable", "true");
        assert!(AclsManager::from_conf(&conf, "yarn").unwrap().is_admin("anyone"));
    }

    #[test]
    fn refusals_use_yarns_words() {
        assert_eq!(
            AclsManager::app_refusal("bob", ApplicationAccessType::ModifyApp, "application_1_0001"),
            "User bob cannot perform operation MODIFY_APP on application_1_0001"
        );
        assert_eq!(
            AclsManager::admin_refusal("bob", "KillActors"),
            "User bob doesn't have permission to call 'KillActors'"
        );
    }

    #[test]
    fn impersonation_follows_the_proxyuser_rules() {
        let mut conf = SparkConf::new();
        conf.set("hadoop.proxyuser.alice.users", "bob");
        conf.set("hadoop.proxyuser.alice.hosts", "127.0.0.1,10.0.0.0/8");
        conf.set("spark.hadoop.hadoop.proxyuser.carol.groups", "*");
        conf.set("hadoop.proxyuser.carol.hosts", "*");
        conf.set("hadoop.proxyuser.dave.users", "*");
        let p = ProxyUsers::from_conf(&conf);
        let via = |real: &str, user: &str| Caller {
            user: user.into(),
            real_user: Some(real.into()),
        };
        let lo = Some("127.0.0.1".parse().unwrap());
        assert_eq!(p.authorize(&via("alice", "bob"), lo), Ok(()));
        assert_eq!(
            p.authorize(&via("alice", "bob"), Some("10.1.2.3".parse().unwrap())),
            Ok(())
        );
        assert_eq!(
            p.authorize(&via("alice", "eve"), lo),
            Err("User: alice is not allowed to impersonate eve".into())
        );
        assert_eq!(
            p.authorize(&via("alice", "bob"), Some("192.168.0.1".parse().unwrap())),
            Err("Unauthorized connection for super-user: alice from IP 192.168.0.1".into())
        );
        assert_eq!(
            p.authorize(&via("carol", "anyone"), Some("192.168.0.1".parse().unwrap())),
            Ok(())
        );
        // No hosts: from nowhere.
        assert_eq!(
            p.authorize(&via("dave", "bob"), lo),
            Err("Unauthorized connection for super-user: dave from IP 127.0.0.1".into())
        );
        // No rules at all.
        assert_eq!(
            p.authorize(&via("eve", "bob"), lo),
            Err("User: eve is not allowed to impersonate bob".into())
        );
        // No real user: nothing to check.
        assert_eq!(
            p.authorize(
                &Caller {
                    user: "eve".into(),
                    real_user: None
                },
                None
            ),
            Ok(())
        );
    }
}
