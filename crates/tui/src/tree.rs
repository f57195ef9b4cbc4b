//! The aggregated call tree (`perf report`'s view): every stack of the
//! visible groups merged by function, top-down (callers first) or
//! bottom-up (the innermost functions first), with counts, percentages and
//! nodes the user expands and collapses.

use std::collections::HashMap;

/// Index of a node in [`CallTree::nodes`]; the root is 0.
pub type NodeId = u32;

/// One function at one position of the merged stacks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Node {
    /// Function name (see `Frame::function`).
    pub name: String,
    /// A kernel frame (else a user frame).
    pub kernel: bool,
    /// Stacks through this node.
    pub count: u64,
    /// Stacks that end at this node.
    pub self_count: u64,
    /// The parent (the root is its own parent).
    pub parent: NodeId,
    /// Children, most stacks first.
    pub children: Vec<NodeId>,
    /// Its children are shown.
    pub expanded: bool,
}

/// One shown row of the tree.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TreeRow {
    /// The node.
    pub node: NodeId,
    /// Its depth (0 for the root's children).
    pub depth: u16,
}

/// The merged stacks and what of them is shown.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallTree {
    /// Nodes; 0 is the root, which is never shown.
    pub nodes: Vec<Node>,
    /// Innermost functions first.
    pub bottom_up: bool,
    /// Stacks merged (the root's count).
    pub total: u64,
    /// Groups looked at, with or without a stack.
    pub groups: usize,
    /// The shown rows, in order.
    pub rows: Vec<TreeRow>,
}

/// One frame of a stack for [`CallTree::build`]: function name and whether
/// it is a kernel frame.
pub type TreeFrame = (String, bool);

/// Which nodes of a tree are expanded, each named by the frames from the
/// root to it. It outlives the tree, so that a tree built again over new
/// data (a live snapshot, the whole index after the first screen) shows
/// what the user had opened.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Expansion(Vec<Vec<TreeFrame>>);

impl CallTree {
    /// Merges `stacks` (each outermost frame first; empty ones are counted
    /// in `groups` only). Top-level nodes start collapsed.
    pub fn build(stacks: impl IntoIterator<Item = Vec<TreeFrame>>, bottom_up: bool) -> CallTree {
        let mut nodes = vec![Node {
            name: String::new(),
            kernel: false,
            count: 0,
            self_count: 0,
            parent: 0,
            children: Vec::new(),
            expanded: true,
        }];
        let mut child_of: HashMap<(NodeId, TreeFrame), NodeId> = HashMap::new();
        let mut groups = 0;
        for mut stack in stacks {
            groups += 1;
            if stack.is_empty() {
                continue;
            }
            if bottom_up {
                stack.reverse();
            }
            nodes[0].count += 1;
            let mut at: NodeId = 0;
            for frame in stack {
                let next = match child_of.get(&(at, frame.clone())) {
                    Some(&n) => n,
                    None => {
                        let n = nodes.len() as NodeId;
                        nodes.push(Node {
                            name: frame.0.clone(),
                            kernel: frame.1,
                            count: 0,
                            self_count: 0,
                            parent: at,
                            children: Vec::new(),
                            expanded: false,
                        });
                        nodes[at as usize].children.push(n);
                        child_of.insert((at, frame), n);
                        n
                    }
                };
                nodes[next as usize].count += 1;
                at = next;
            }
            nodes[at as usize].self_count += 1;
        }
        // Children by count, most first; ties by name, so the order does
        // not depend on the order of the stacks.
        let order: Vec<(u64, String)> = nodes.iter().map(|n| (n.count, n.name.clone())).collect();
        for n in &mut nodes {
            n.children.sort_by(|&a, &b| {
                let (a, b) = (&order[a as usize], &order[b as usize]);
                b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1))
            });
        }
        let total = nodes[0].count;
        let mut t = CallTree {
            nodes,
            bottom_up,
            total,
            groups,
            rows: Vec::new(),
        };
        t.update_rows();
        t
    }

    /// Recomputes [`CallTree::rows`] after nodes were expanded or
    /// collapsed.
    pub fn update_rows(&mut self) {
        let mut rows = Vec::new();
        let mut todo: Vec<TreeRow> = self.nodes[0]
            .children
            .iter()
            .rev()
            .map(|&node| TreeRow { node, depth: 0 })
            .collect();
        while let Some(r) = todo.pop() {
            rows.push(r);
            let n = &self.nodes[r.node as usize];
            if n.expanded {
                todo.extend(n.children.iter().rev().map(|&node| TreeRow {
                    node,
                    depth: r.depth.saturating_add(1),
                }));
            }
        }
        self.rows = rows;
    }

    /// Node `id`.
    pub fn node(&self, id: NodeId) -> &Node {
        &self.nodes[id as usize]
    }

    /// Shows or hides the children of `id`; false when it has none.
    pub fn set_expanded(&mut self, id: NodeId, expanded: bool) -> bool {
        let n = &mut self.nodes[id as usize];
        if n.children.is_empty() || id == 0 {
            return false;
        }
        n.expanded = expanded;
        self.update_rows();
        true
    }

    /// Expands `id` and everything below it.
    pub fn expand_all(&mut self, id: NodeId) {
        let mut todo = vec![id];
        while let Some(n) = todo.pop() {
            let node = &mut self.nodes[n as usize];
            node.expanded = !node.children.is_empty();
            todo.extend(node.children.iter().copied());
        }
        self.update_rows();
    }

    /// The expanded nodes, collapsed parents or not.
    pub fn expansion(&self) -> Expansion {
        let mut out = Vec::new();
        let mut todo: Vec<(NodeId, Vec<TreeFrame>)> = vec![(0, Vec::new())];
        while let Some((id, path)) = todo.pop() {
            let n = &self.nodes[id as usize];
            if id != 0 && n.expanded {
                out.push(path.clone());
            }
            for &c in &n.children {
                let child = &self.nodes[c as usize];
                let mut p = path.clone();
                p.push((child.name.clone(), child.kernel));
                todo.push((c, p));
            }
        }
        Expansion(out)
    }

    /// Expands the nodes of `e` that this tree has.
    pub fn expand(&mut self, e: &Expansion) {
        for path in &e.0 {
            let mut at = Some(0);
            for (name, kernel) in path {
                at = at.and_then(|a| {
                    self.nodes[a as usize].children.iter().copied().find(|&c| {
                        let n = &self.nodes[c as usize];
                        n.name == *name && n.kernel == *kernel
                    })
                });
            }
            if let Some(n) = at.filter(|&n| n != 0) {
                let node = &mut self.nodes[n as usize];
                node.expanded = !node.children.is_empty();
            }
        }
        self.update_rows();
    }

    /// The row showing `id`, if it is shown.
    pub fn row_of(&self, id: NodeId) -> Option<usize> {
        self.rows.iter().position(|r| r.node == id)
    }

    /// The nodes in depth-first order (the order of a fully expanded
    /// tree), without the root.
    pub fn preorder(&self) -> Vec<NodeId> {
        let mut out = Vec::with_capacity(self.nodes.len());
        let mut todo: Vec<NodeId> = self.nodes[0].children.iter().rev().copied().collect();
        while let Some(n) = todo.pop() {
            out.push(n);
            todo.extend(self.nodes[n as usize].children.iter().rev().copied());
        }
        out
    }

    /// Expands the ancestors of `id` so that it is shown; returns its row.
    pub fn reveal(&mut self, id: NodeId) -> Option<usize> {
        let mut p = self.nodes[id as usize].parent;
        while p != 0 {
            self.nodes[p as usize].expanded = true;
            p = self.nodes[p as usize].parent;
        }
        self.update_rows();
        self.row_of(id)
    }

    /// `count` as a percentage of all stacks.
    pub fn percent(&self, count: u64) -> f64 {
        if self.total == 0 {
            0.0
        } else {
            count as f64 * 100.0 / self.total as f64
        }
    }
}
